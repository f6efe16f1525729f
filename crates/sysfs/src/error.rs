//! One error type for every kernel interface; each variant names the file it is about.

use std::path::PathBuf;

/// What went wrong reading or writing a kernel file. Every variant carries the path, so a log
/// line alone tells which knob of which group failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {value:?} to {path}: {source}")]
    Write {
        path: PathBuf,
        value: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot create {path}: {source}")]
    Create {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot remove {path}: {source}")]
    Remove {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Parse { path: PathBuf, line: usize, message: String },
    #[error("{path}: {message}")]
    Unsupported { path: PathBuf, message: String },
    #[error("{call} for {who}: {source}")]
    Syscall {
        call: &'static str,
        who: i64,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// True when the file or process the error is about does not exist (any more): a process
    /// that exited between a scan and a write is routine, not a failure.
    pub fn is_not_found(&self) -> bool {
        let io = match self {
            Error::Read { source, .. }
            | Error::Write { source, .. }
            | Error::Create { source, .. }
            | Error::Remove { source, .. }
            | Error::Syscall { source, .. } => source,
            _ => return false,
        };
        matches!(io.raw_os_error(), Some(libc::ENOENT) | Some(libc::ESRCH)) || io.kind() == std::io::ErrorKind::NotFound
    }
}

pub type Result<T> = std::result::Result<T, Error>;

pub(crate) fn read_to_string(path: &std::path::Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| Error::Read { path: path.to_owned(), source })
}

/// Writes `value` in one `write(2)`, as cgroupfs and sysfs expect (they parse each write whole).
/// The file is opened with `O_NOFOLLOW`: kernel files are never symbolic links, and a root
/// process must not write through one planted in a fake or hostile tree.
pub(crate) fn write_str(path: &std::path::Path, value: &str) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let err = |source| Error::Write { path: path.to_owned(), value: value.to_owned(), source };
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .truncate(true) // as `echo v > knob` does; cgroupfs ignores it, fake trees need it
        .open(path)
        .map_err(err)?;
    f.write_all(value.as_bytes()).map_err(err)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_write_never_goes_through_a_symlink() {
        let t = tempfile::tempdir().unwrap();
        let victim = t.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let knob = t.path().join("cpu.weight");
        std::os::unix::fs::symlink(&victim, &knob).unwrap();
        let e = super::write_str(&knob, "1").unwrap_err().to_string();
        assert!(e.contains("cpu.weight"), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    }
}
