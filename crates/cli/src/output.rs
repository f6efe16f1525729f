//! Files the CLI writes: never half-written, never one of the inputs.
//!
//! Every command that writes a file (`trace convert`, `trace capture -o`, `sim run --trace-out`,
//! `sim merge -o`, `report -o`, the canonical rewrite of a finished `sim sweep`) goes through
//! [`OutputFile`]:
//!
//! - the bytes go to a temporary file in the output's directory, renamed over the output only
//!   when the command succeeds ([`OutputFile::commit`]); a command that fails half-way (an input
//!   error at line 21, a full disk, Ctrl-C) leaves the old output as it was and no temporary
//!   file behind;
//! - an existing output is kept unless `--force`; a path that exists but is not a regular file
//!   (`/dev/null`, a directory, a FIFO) is refused even with `--force` (a rename would replace
//!   the device node);
//! - an output that is one of the command's inputs (the same file: same device and inode, through
//!   any path or link) is refused even with `--force`.
//!
//! A new output gets mode `0666 & !umask`, like a file created by `File::create`; an
//! overwritten one keeps its mode.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

/// An output being written; see the module doc.
#[derive(Debug)]
pub struct OutputFile {
    path: PathBuf,
    force: bool,
    tmp: tempfile::NamedTempFile,
}

/// Refuse `out` if it exists and is the same file as one of `inputs` (device and inode).
pub fn refuse_input_as_output(out: &Path, inputs: &[&Path]) -> anyhow::Result<()> {
    let Ok(o) = std::fs::metadata(out) else { return Ok(()) };
    for i in inputs {
        if let Ok(m) = std::fs::metadata(i) {
            if (m.dev(), m.ino()) == (o.dev(), o.ino()) {
                bail!("{} is also an input ({}): refusing to overwrite an input, even with --force", out.display(), i.display());
            }
        }
    }
    Ok(())
}

/// The process's umask (from /proc/self/status; 022 if it cannot be read).
fn umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("Umask:").map(|v| v.trim().to_string())))
        .and_then(|v| u32::from_str_radix(&v, 8).ok())
        .unwrap_or(0o022)
}

impl OutputFile {
    /// Start writing `path`: refused if it exists without `force`, if it exists and is not a
    /// regular file, or if it is one of `inputs`.
    pub fn create(path: &Path, force: bool, inputs: &[&Path]) -> anyhow::Result<OutputFile> {
        // A symlink is followed: `--force` overwrites the file it points to, as `>` would.
        let path = match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => {
                path.canonicalize().with_context(|| format!("{}: a symlink to nothing", path.display()))?
            }
            _ => path.to_path_buf(),
        };
        let existing = match std::fs::metadata(&path) {
            Ok(m) => Some(m),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e).with_context(|| path.display().to_string()),
        };
        if let Some(m) = &existing {
            if !m.is_file() {
                bail!(
                    "{}: exists and is not a regular file; give a file path (or `-` for stdout where the command takes it)",
                    path.display()
                );
            }
            refuse_input_as_output(&path, inputs)?;
            if !force {
                bail!("{} exists; pass --force to overwrite it", path.display());
            }
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tmp")
            .tempfile_in(&dir)
            .with_context(|| format!("creating a temporary file in {} for {}", dir.display(), path.display()))?;
        let mode = existing.map_or(0o666 & !umask(), |m| m.permissions().mode() & 0o7777);
        tmp.as_file().set_permissions(std::fs::Permissions::from_mode(mode)).with_context(|| path.display().to_string())?;
        Ok(OutputFile { path, force, tmp })
    }

    /// The file to write to (the temporary one).
    pub fn file(&mut self) -> &mut File {
        self.tmp.as_file_mut()
    }

    /// Put the written bytes in place: flushed to the disk, then renamed over the output. Without
    /// `--force`, an output that appeared meanwhile is not replaced.
    pub fn commit(mut self) -> anyhow::Result<()> {
        let path = self.path.clone();
        self.file().flush().with_context(|| path.display().to_string())?;
        self.tmp.as_file().sync_all().with_context(|| format!("writing {}", path.display()))?;
        let r = if self.force { self.tmp.persist(&path).map(drop) } else { self.tmp.persist_noclobber(&path).map(drop) };
        r.map_err(|e| e.error).with_context(|| format!("writing {}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leftovers(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }

    #[test]
    fn an_output_appears_only_on_commit_and_a_dropped_one_leaves_the_old_file() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out.json");
        std::fs::write(&out, "old").unwrap();
        assert!(OutputFile::create(&out, false, &[]).unwrap_err().to_string().contains("pass --force"));
        let mut o = OutputFile::create(&out, true, &[]).unwrap();
        o.file().write_all(b"half").unwrap();
        drop(o); // the command failed
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "old");
        assert_eq!(leftovers(d.path()), ["out.json"]);
        let mut o = OutputFile::create(&out, true, &[]).unwrap();
        o.file().write_all(b"new").unwrap();
        o.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "new");
        assert_eq!(leftovers(d.path()), ["out.json"]);
    }

    #[test]
    fn an_input_or_a_device_is_never_an_output_even_with_force() {
        let d = tempfile::tempdir().unwrap();
        let input = d.path().join("sc.toml");
        std::fs::write(&input, "x").unwrap();
        let link = d.path().join("link.toml");
        std::fs::hard_link(&input, &link).unwrap();
        let e = OutputFile::create(&link, true, &[&input]).unwrap_err().to_string();
        assert!(e.contains("is also an input"), "{e}");
        assert_eq!(std::fs::read_to_string(&input).unwrap(), "x");
        let e = OutputFile::create(Path::new("/dev/null"), true, &[]).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let e = OutputFile::create(d.path(), true, &[]).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
    }

    #[test]
    fn a_new_output_gets_the_umask_mode_and_an_old_one_keeps_its_mode() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("a");
        let mut o = OutputFile::create(&out, false, &[]).unwrap();
        o.file().write_all(b"1").unwrap();
        o.commit().unwrap();
        assert_eq!(std::fs::metadata(&out).unwrap().permissions().mode() & 0o777, 0o666 & !umask());
        std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o600)).unwrap();
        let o = OutputFile::create(&out, true, &[]).unwrap();
        o.commit().unwrap();
        assert_eq!(std::fs::metadata(&out).unwrap().permissions().mode() & 0o777, 0o600);
    }
}
