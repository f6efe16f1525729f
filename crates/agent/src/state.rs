//! The crash-safe journal of everything the agent changed, and how to undo it.
//!
//! Invariant: an entry is on disk (written to a temporary file, fsynced, renamed over the state
//! file, directory fsynced) *before* the change it describes is made. So after any crash the
//! file lists a superset of what is changed, and [`Journal::restore`] undoes it.
//!
//! The agent runs as root and writes what the journal names: the journal is trusted only as
//! far as nobody else can have written it, and only for what the agent itself changes.
//!
//! - Its directory ([`private_dir`]) is created with mode 0700; an existing one must be a real
//!   directory (not a symlink) owned by the agent's user, without group or world write bits,
//!   below ancestors that only root or that user can change (or that are sticky, like `/tmp`).
//! - Files are opened with `O_NOFOLLOW`; the temporary file is created with `O_EXCL` and renamed
//!   over the journal. A journal not owned by the agent's user, or writable by others, is refused.
//! - Every entry must name something the agent changes ([`Bounds`]): its own groups under the
//!   cgroup mounts, pre-existing knobs of those groups, `cgroup.subtree_control` of a v2 mount
//!   or of its group, the `/proc/sys/vm` write-back keys it holds, processes (pid > 1) moved back
//!   to a group under a cgroup mount. A journal with any other entry is refused whole: it was
//!   not written by the agent.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

use forefront_sysfs::{ioprio, ioprio::IoPrio, procfs, Cgroup, CgroupMounts, Controller, Knob, Version};
use serde::{Deserialize, Serialize};

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("cannot write state file {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read state file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("state file {path} is corrupt: {message}")]
    Corrupt { path: PathBuf, message: String },
    /// The directory or a file of the journal could have been written by someone else.
    #[error("state {path}: {message}: refused (the agent runs as root and writes what its journal names)")]
    Unsafe { path: PathBuf, message: String },
    /// An entry names a file the agent never changes.
    #[error("state file {path}: entry {index} ({kind}) {message}: refused whole, nothing restored (not written by the agent; check it, then remove it)")]
    Foreign { path: PathBuf, index: usize, kind: &'static str, message: String },
    /// Another live process holds the journal's lock (see [`JournalLock`]).
    #[error("state file {path} is in use by a running agent ({holder}; lock {lock}): refused, nothing changed or restored (stop that agent first, or give this one its own agent.state, agent.socket and agent.group)")]
    Locked {
        path: PathBuf,
        lock: PathBuf,
        holder: String,
        /// The holder's pid, when it has written it.
        holder_pid: Option<u32>,
        /// The holder only restores the journal (`agent restore`, or a dead agent's watchdog):
        /// it lets go within moments ([`JournalLock::acquire_waiting`]).
        restoring: bool,
    },
}

/// One change and what undoing it needs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Entry {
    /// A group the agent created: removed on restore (after its members are moved out).
    Created { dir: PathBuf, version: Version, mount: PathBuf },
    /// A pre-existing knob file and its original text.
    Knob { path: PathBuf, original: String },
    /// v2 controllers the agent enabled in a pre-existing `cgroup.subtree_control`.
    Subtree { path: PathBuf, added: Vec<String> },
    /// A process moved out of `original` (a group directory), identified by pid + start time.
    Moved { pid: i32, start_time: u64, original: PathBuf, version: Version },
    /// A thread whose I/O priority was changed.
    Ioprio { tid: i32, start_time: u64, original: IoPrio },
    /// A group the agent froze: thawed on restore.
    Frozen { dir: PathBuf, version: Version },
}

impl Entry {
    fn kind(&self) -> &'static str {
        match self {
            Entry::Created { .. } => "created",
            Entry::Knob { .. } => "knob",
            Entry::Subtree { .. } => "subtree",
            Entry::Moved { .. } => "moved",
            Entry::Ioprio { .. } => "ioprio",
            Entry::Frozen { .. } => "frozen",
        }
    }
}

/// The `/proc/sys/vm` keys the agent holds during a pause (see [`crate::writeback`]), and
/// `dirty_writeback_centisecs`, which agents before 2026-11-28 held: a journal of theirs is
/// still restored.
pub const VM_KEYS: [&str; 6] = [
    "dirty_bytes",
    "dirty_ratio",
    "dirty_background_bytes",
    "dirty_background_ratio",
    "dirty_writeback_centisecs",
    "dirty_expire_centisecs",
];

/// The kernel switch the agent sets around its own cgroup moves (`agent.expedite_moves`),
/// relative to the root.
pub const RCU_EXPEDITED: &str = "sys/kernel/rcu_expedited";

/// Longest knob text a journal may hold (bytes): cgroup knobs are a few lines at most.
const MAX_ORIGINAL: usize = 4096;
/// Largest journal read (bytes): thousands of entries fit; a larger file is not the agent's.
const MAX_JOURNAL: u64 = 16 << 20;

/// What a journal may name: the files the agent itself changes on this system.
#[derive(Clone, Debug)]
pub struct Bounds {
    root: PathBuf,
    group: String,
    /// Every cgroup mount (under the root) and its version.
    mounts: Vec<(PathBuf, Version)>,
}

impl Bounds {
    /// The bounds of an agent with group name `group` under `root` (reads the cgroup mounts).
    pub fn read(root: &Path, group: &str) -> Result<Self, forefront_sysfs::Error> {
        let m = CgroupMounts::read(root)?;
        let mut mounts: Vec<(PathBuf, Version)> = m.v1.values().map(|p| (p.clone(), Version::V1)).collect();
        mounts.extend(m.v2.map(|p| (p, Version::V2)));
        mounts.dedup();
        Ok(Bounds { root: root.into(), group: group.into(), mounts })
    }

    /// The agent's own group directories in the hierarchy mounted at `mount`.
    fn own_dirs(&self, mount: &Path) -> [PathBuf; 3] {
        let top = mount.join(&self.group);
        [top.join("fg"), top.join("bg"), top]
    }

    fn mount_of(&self, dir: &Path, version: Version) -> Option<&Path> {
        self.mounts.iter().filter(|(m, v)| *v == version && dir.starts_with(m)).map(|(m, _)| m.as_path()).max()
    }

    fn is_own_dir(&self, dir: &Path, version: Version) -> bool {
        self.mounts.iter().any(|(m, v)| *v == version && self.own_dirs(m).iter().any(|d| d == dir))
    }

    /// `sys/block/DISK/queue/nr_requests` under the root (`pause.nr_requests`), or
    /// `sys/block/DISK/queue/iosched/strict_guarantees` (`pause.strict_guarantees`).
    fn is_queue_knob(&self, path: &Path) -> bool {
        let Ok(rest) = path.strip_prefix(self.root.join("sys/block")) else { return false };
        let parts: Vec<Component> = rest.components().collect();
        match parts.as_slice() {
            [Component::Normal(_), Component::Normal(q), Component::Normal(f)] => *q == "queue" && *f == "nr_requests",
            [Component::Normal(_), Component::Normal(q), Component::Normal(s), Component::Normal(f)] => {
                *q == "queue" && *s == "iosched" && *f == "strict_guarantees"
            }
            _ => false,
        }
    }

    /// Why `e` is not something the agent changes, if it is not.
    pub fn check(&self, e: &Entry) -> Result<(), String> {
        let plain = |p: &Path| -> Result<(), String> {
            if !p.is_absolute() || p.components().any(|c| matches!(c, Component::ParentDir | Component::CurDir)) {
                return Err(format!("names {:?}: not an absolute path without '..'", p.display()));
            }
            if p.as_os_str().len() > 4096 {
                return Err("names a path longer than 4096 bytes".into());
            }
            Ok(())
        };
        let either = |v: Version| if v == Version::V1 { "v1" } else { "v2" };
        match e {
            Entry::Created { dir, version, mount } => {
                plain(dir)?;
                plain(mount)?;
                if !self.mounts.iter().any(|(m, v)| m == mount && v == version) {
                    return Err(format!("names mount {:?}, not a {} cgroup mount here", mount.display(), either(*version)));
                }
                if !self.own_dirs(mount).contains(dir) {
                    return Err(format!("names {:?}, not one of the agent's groups ({}/fg|bg)", dir.display(), self.group));
                }
            }
            Entry::Frozen { dir, version } => {
                plain(dir)?;
                if !self.is_own_dir(dir, *version) {
                    return Err(format!("names {:?}, not one of the agent's {} groups", dir.display(), either(*version)));
                }
            }
            Entry::Knob { path, original } => {
                plain(path)?;
                if original.len() > MAX_ORIGINAL || original.chars().any(|c| c.is_control() && c != '\n') {
                    return Err(format!("{}: original text too long or with control characters", path.display()));
                }
                let vm = self.root.join("proc/sys/vm");
                let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
                let in_vm = path.parent() == Some(vm.as_path()) && VM_KEYS.contains(&name)
                    || *path == self.root.join(RCU_EXPEDITED)
                    || self.is_queue_knob(path);
                let knob_file = [
                    Knob::CpuWeight,
                    Knob::CpuIdle,
                    Knob::IoWeight,
                    Knob::Freeze,
                    Knob::MemoryLow,
                    Knob::IoPrioClass,
                    Knob::IoLatency,
                ]
                .iter()
                .flat_map(|k| [k.files(Version::V1), k.files(Version::V2)])
                .any(|files| files.contains(&name));
                let in_group = knob_file
                    && path.parent().is_some_and(|d| self.is_own_dir(d, Version::V1) || self.is_own_dir(d, Version::V2));
                if !in_vm && !in_group {
                    return Err(format!(
                        "names {:?}: neither a knob of the agent's groups, a /proc/sys/vm write-back key, a disk's queue/nr_requests or queue/iosched/strict_guarantees nor {RCU_EXPEDITED}",
                        path.display()
                    ));
                }
            }
            Entry::Subtree { path, added } => {
                plain(path)?;
                let ok_path = path.file_name().is_some_and(|n| n == "cgroup.subtree_control")
                    && path.parent().is_some_and(|d| {
                        self.mounts.iter().any(|(m, v)| *v == Version::V2 && (d == m || *d == m.join(&self.group)))
                    });
                if !ok_path {
                    return Err(format!(
                        "names {:?}, not cgroup.subtree_control of a v2 mount or of the agent's group",
                        path.display()
                    ));
                }
                let known: Vec<&str> =
                    [Controller::Cpu, Controller::Io, Controller::Memory].iter().filter_map(|c| c.v2_name()).collect();
                if let Some(c) = added.iter().find(|c| !known.contains(&c.as_str())) {
                    return Err(format!("names controller {c:?}, not one the agent enables"));
                }
            }
            Entry::Moved { pid, original, version, .. } => {
                plain(original)?;
                if *pid <= 1 {
                    return Err(format!("names pid {pid}: the agent never moves pid 1 or below"));
                }
                if self.mount_of(original, *version).is_none() {
                    return Err(format!("names {:?}, not a group under a {} cgroup mount", original.display(), either(*version)));
                }
            }
            Entry::Ioprio { tid, original, .. } => {
                if *tid <= 1 || original.class > 3 || original.level > 7 {
                    return Err(format!("names tid {tid} class {} level {}: out of range", original.class, original.level));
                }
            }
        }
        Ok(())
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    /// Pid of the agent that wrote it (for the log of a restore after a crash).
    agent_pid: u32,
    entries: Vec<Entry>,
}

/// The journal: in memory and on disk, always in step.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    root: PathBuf,
    file: File,
    /// This journal made its directory: a clean restore removes it again (if empty).
    made_dir: bool,
}

fn unsafe_err(path: &Path, message: impl Into<String>) -> StateError {
    StateError::Unsafe { path: path.into(), message: message.into() }
}

/// Makes sure `dir` is a directory only the agent's user can change, creating it (mode 0700;
/// missing ancestors 0755) if needed. Returns whether it created `dir`.
///
/// Refused: `dir` a symlink or not a directory; owned by another user; with group or world
/// write bits; an ancestor owned by someone other than root or this user, or writable by others
/// without the sticky bit (whoever can write it can replace `dir`).
pub fn private_dir(dir: &Path) -> Result<bool, StateError> {
    checked_dir(dir, true)
}

/// [`private_dir`] without creating anything: `Ok(false)` when `dir` does not exist yet.
pub fn check_private_dir(dir: &Path) -> Result<bool, StateError> {
    checked_dir(dir, false).map(|_| dir.exists())
}

fn checked_dir(dir: &Path, create: bool) -> Result<bool, StateError> {
    let euid = nix::unistd::geteuid().as_raw();
    if !dir.is_absolute() {
        return Err(unsafe_err(dir, "the state directory must be an absolute path"));
    }
    let mut made = false;
    match std::fs::symlink_metadata(dir) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !create => {
            // Not there yet: its nearest existing ancestor must be safe to create it in.
            for a in dir.ancestors().skip(1) {
                if a.exists() {
                    return safe_ancestors(dir, a, euid).map(|()| false);
                }
            }
            return Ok(false);
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(parent) = dir.parent() {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o755)
                    .create(parent)
                    .map_err(|source| StateError::Write { path: parent.into(), source })?;
            }
            match std::fs::DirBuilder::new().mode(0o700).create(dir) {
                Ok(()) => made = true,
                // Someone made it between our look and our mkdir: checked below like any other.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(source) => return Err(StateError::Write { path: dir.into(), source }),
            }
        }
        Err(source) => return Err(StateError::Read { path: dir.into(), source }),
    }
    // The directory itself, opened without following a symlink, checked through its descriptor.
    let d =
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW).open(dir).map_err(
            |e| match e.raw_os_error() {
                Some(libc::ELOOP) | Some(libc::ENOTDIR) => unsafe_err(dir, "is a symbolic link or not a directory"),
                _ => StateError::Read { path: dir.into(), source: e },
            },
        )?;
    let m = d.metadata().map_err(|source| StateError::Read { path: dir.into(), source })?;
    if m.uid() != euid {
        return Err(unsafe_err(dir, format!("directory is owned by uid {}, not by the agent's uid {euid}", m.uid())));
    }
    if m.mode() & 0o022 != 0 {
        return Err(unsafe_err(dir, format!("directory has mode {:o}: group or others may write it", m.mode() & 0o7777)));
    }
    let parent = dir.parent().unwrap_or(Path::new("/"));
    safe_ancestors(dir, parent, euid)?;
    Ok(made)
}

/// `from` and every directory above it: owned by root or `euid`, and not writable by others
/// unless sticky.
fn safe_ancestors(dir: &Path, from: &Path, euid: u32) -> Result<(), StateError> {
    for a in from.ancestors() {
        let m = std::fs::metadata(a).map_err(|source| StateError::Read { path: a.into(), source })?;
        if m.uid() != 0 && m.uid() != euid {
            return Err(unsafe_err(dir, format!("ancestor {} is owned by uid {}", a.display(), m.uid())));
        }
        if m.mode() & 0o022 != 0 && m.mode() & 0o1000 == 0 {
            return Err(unsafe_err(
                dir,
                format!("ancestor {} has mode {:o}: others may write it (and it is not sticky)", a.display(), m.mode() & 0o7777),
            ));
        }
    }
    Ok(())
}

/// One agent per journal: an exclusive `flock` on `<state>.lock` (beside the journal, in its
/// private directory), held for the agent's lifetime and by `agent restore` while it restores.
/// A second agent on the same journal would restore the first one's changes under it (and
/// replace its control socket); with the lock it is refused with [`StateError::Locked`], which
/// names the holder's pid. The kernel drops the lock when its holder dies, even by SIGKILL, so
/// a crashed agent never blocks the next one. The file is opened close-on-exec (the watchdog,
/// which outlives a killed agent, does not inherit it) and removed on drop.
///
/// The file holds the holder's pid, followed by ` restoring` when the holder only restores the
/// journal (`agent restore`, or the watchdog of an agent that died): such a holder lets go
/// within moments, and [`JournalLock::acquire_waiting`] waits for it rather than refuse.
#[derive(Debug)]
pub struct JournalLock {
    path: PathBuf,
    _file: nix::fcntl::Flock<std::fs::File>,
    /// This lock made the journal's directory: removed on drop (if empty by then).
    made_dir: bool,
}

impl JournalLock {
    /// The lock file of the journal at `state`.
    pub fn path_for(state: &Path) -> PathBuf {
        state.with_extension("lock")
    }

    /// Takes the lock of the journal at `state`, or says who holds it. `create`: make the
    /// journal's private directory if it is missing (the agent); without it (`agent restore`),
    /// `Ok(None)` when the directory is absent: then there is no journal either.
    pub fn acquire(state: &Path, create: bool) -> Result<Option<Self>, StateError> {
        Self::acquire_as(state, create, false)
    }

    /// [`JournalLock::acquire`], but a holder that only restores the journal, or one for which
    /// `wait_for(pid)` says so (a dead agent's lock the kernel has not dropped yet), is waited
    /// for, up to `wait`, instead of refused. `restoring`: this holder only restores (`agent
    /// restore`, the watchdog); others that take the lock meanwhile wait for it in turn.
    ///
    /// So is a holder the file does not name yet: the lock is taken before the file is
    /// rewritten, so for a moment it holds nothing, or the pid of a holder that was killed
    /// (whose text stays) while the new one — often a watchdog about to restore — holds it.
    pub fn acquire_waiting(
        state: &Path,
        create: bool,
        restoring: bool,
        wait: std::time::Duration,
        wait_for: impl Fn(u32) -> bool,
    ) -> Result<Option<Self>, StateError> {
        let t0 = std::time::Instant::now();
        loop {
            match Self::acquire_as(state, create, restoring) {
                Err(StateError::Locked { restoring: other_restores, holder_pid, .. })
                    if (other_restores || holder_pid.is_none_or(|p| !pid_alive(p) || wait_for(p))) && t0.elapsed() < wait =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                other => return other,
            }
        }
    }

    fn acquire_as(state: &Path, create: bool, restoring: bool) -> Result<Option<Self>, StateError> {
        use std::io::{Read, Seek, Write};
        use std::os::unix::fs::MetadataExt;
        let dir = state.parent().ok_or_else(|| unsafe_err(state, "the state path names no file"))?;
        let made_dir = if create {
            private_dir(dir)?
        } else if check_private_dir(dir)? {
            false
        } else {
            return Ok(None);
        };
        let path = Self::path_for(state);
        let err = |source| StateError::Write { path: path.clone(), source };
        loop {
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&path)
                .map_err(|e| match e.raw_os_error() {
                    Some(libc::ELOOP) => unsafe_err(&path, "is a symbolic link"),
                    _ => err(e),
                })?;
            let m = f.metadata().map_err(err)?;
            if !m.is_file() || m.uid() != nix::unistd::geteuid().as_raw() {
                return Err(unsafe_err(&path, format!("is a {} owned by uid {}, not the agent's lock", kind_of(&m), m.uid())));
            }
            let mut f = match nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusiveNonblock) {
                Ok(f) => f,
                Err((mut f, nix::errno::Errno::EWOULDBLOCK)) => {
                    let mut text = String::new();
                    let _ = (&mut f).take(32).read_to_string(&mut text);
                    let mut words = text.split_whitespace();
                    let holder_pid = words.next().and_then(|w| w.parse::<u32>().ok());
                    let restoring = holder_pid.is_some() && words.next() == Some("restoring");
                    let holder = match (holder_pid, restoring) {
                        (Some(pid), false) => format!("agent pid {pid}"),
                        (Some(pid), true) => format!("pid {pid}, restoring the journal"),
                        (None, _) => "a process that has not written its pid yet".to_owned(),
                    };
                    return Err(StateError::Locked { path: state.into(), lock: path.clone(), holder, holder_pid, restoring });
                }
                Err((_, e)) => return Err(err(std::io::Error::from(e))),
            };
            // The holder before us may have removed the file after we opened it: a lock on
            // an unlinked file excludes nobody. Locked the file the path names now: done.
            match std::fs::symlink_metadata(&path) {
                Ok(now) if now.dev() == m.dev() && now.ino() == m.ino() => {}
                _ => continue,
            }
            f.set_len(0).map_err(err)?;
            f.rewind().map_err(err)?;
            let role = if restoring { " restoring" } else { "" };
            writeln!(f, "{}{role}", std::process::id()).map_err(err)?;
            return Ok(Some(JournalLock { path, _file: f, made_dir }));
        }
    }
}

/// Whether a process `pid` exists (a zombie counts: its lock is not dropped yet either).
fn pid_alive(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else { return false };
    !matches!(nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None), Err(nix::errno::Errno::ESRCH))
}

impl JournalLock {
    /// Gives up the lock as a killed holder does: the kernel drops it, the file stays.
    #[cfg(test)]
    pub(crate) fn abandon(mut self) {
        self.made_dir = false;
        let path = std::mem::take(&mut self.path);
        drop(self);
        assert!(path.exists());
    }
}

impl Drop for JournalLock {
    fn drop(&mut self) {
        if self.path.as_os_str().is_empty() {
            return; // abandoned
        }
        // Removed while still held: an agent waiting to open it finds no file or a new one.
        let _ = std::fs::remove_file(&self.path);
        if self.made_dir {
            let _ = self.path.parent().map(std::fs::remove_dir);
        }
    }
}

impl Journal {
    /// A fresh, empty journal at `path` (written immediately; its directory made private or
    /// checked, see [`private_dir`]).
    pub fn create(path: &Path, root: &Path) -> Result<Self, StateError> {
        let dir = path.parent().ok_or_else(|| unsafe_err(path, "the state path names no file"))?;
        let made_dir = private_dir(dir)?;
        let mut j = Journal {
            path: path.into(),
            root: root.into(),
            file: File { agent_pid: std::process::id(), entries: vec![] },
            made_dir,
        };
        j.flush()?;
        Ok(j)
    }

    /// An empty journal that has not written its file (what remains after a restore).
    pub fn detached(path: &Path, root: &Path) -> Self {
        Journal {
            path: path.into(),
            root: root.into(),
            file: File { agent_pid: std::process::id(), entries: vec![] },
            made_dir: false,
        }
    }

    /// A journal left by an earlier run, if any: read only from a private directory
    /// ([`private_dir`]), from a regular file owned by the agent's user that others cannot
    /// write, and only if every entry is within the [`Bounds`] of an agent with group `group`
    /// (read from the system only when there is a journal).
    pub fn open_existing(path: &Path, root: &Path, group: &str) -> Result<Option<Self>, StateError> {
        use std::io::Read;
        let dir = path.parent().ok_or_else(|| unsafe_err(path, "the state path names no file"))?;
        match std::fs::symlink_metadata(dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            _ => {
                private_dir(dir)?;
            }
        }
        let f = match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(unsafe_err(path, "is a symbolic link")),
            Err(source) => return Err(StateError::Read { path: path.into(), source }),
        };
        let m = f.metadata().map_err(|source| StateError::Read { path: path.into(), source })?;
        let euid = nix::unistd::geteuid().as_raw();
        if !m.is_file() {
            return Err(unsafe_err(path, "is not a regular file"));
        }
        if m.uid() != euid || m.mode() & 0o022 != 0 {
            return Err(unsafe_err(
                path,
                format!("owned by uid {} with mode {:o} (want uid {euid}, no group or world write)", m.uid(), m.mode() & 0o7777),
            ));
        }
        let mut text = String::new();
        f.take(MAX_JOURNAL + 1).read_to_string(&mut text).map_err(|source| StateError::Read { path: path.into(), source })?;
        if text.len() as u64 > MAX_JOURNAL {
            return Err(StateError::Corrupt { path: path.into(), message: format!("larger than {MAX_JOURNAL} bytes") });
        }
        let file: File =
            serde_json::from_str(&text).map_err(|e| StateError::Corrupt { path: path.into(), message: e.to_string() })?;
        let bounds = Bounds::read(root, group).map_err(|e| StateError::Corrupt {
            path: path.into(),
            message: format!("cannot tell what the agent manages: {e}"),
        })?;
        for (index, e) in file.entries.iter().enumerate() {
            bounds.check(e).map_err(|message| StateError::Foreign { path: path.into(), index, kind: e.kind(), message })?;
        }
        Ok(Some(Journal { path: path.into(), root: root.into(), file, made_dir: false }))
    }

    pub fn entries(&self) -> &[Entry] {
        &self.file.entries
    }

    pub fn writer_pid(&self) -> u32 {
        self.file.agent_pid
    }

    /// Records entries (skipping ones already recorded) and makes them durable.
    pub fn record(&mut self, entries: impl IntoIterator<Item = Entry>) -> Result<(), StateError> {
        let mut changed = false;
        for e in entries {
            if !self.file.entries.contains(&e) {
                self.file.entries.push(e);
                changed = true;
            }
        }
        if changed {
            self.flush()?;
        }
        Ok(())
    }

    /// Drops entries that no longer describe a change (a thawed group, an exited process).
    pub fn forget(&mut self, keep: impl Fn(&Entry) -> bool) -> Result<(), StateError> {
        let before = self.file.entries.len();
        self.file.entries.retain(|e| keep(e));
        if self.file.entries.len() != before {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the journal: a new temporary file (`O_EXCL`, `O_NOFOLLOW`, mode 0600) beside the
    /// journal, fsynced, renamed over it, the directory fsynced. A leftover temporary file of
    /// an earlier crash (a regular file of ours) is removed first; anything else there is refused.
    fn flush(&mut self) -> Result<(), StateError> {
        use std::io::Write;
        let err = |source| StateError::Write { path: self.path.clone(), source };
        let tmp = self.path.with_extension("tmp");
        match std::fs::symlink_metadata(&tmp) {
            Ok(m) if m.file_type().is_file() && m.uid() == nix::unistd::geteuid().as_raw() => {
                std::fs::remove_file(&tmp).map_err(err)?
            }
            Ok(m) => {
                return Err(unsafe_err(
                    &tmp,
                    format!("is a {} owned by uid {}, not a leftover of the agent", kind_of(&m), m.uid()),
                ))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(err(e)),
        }
        let text = serde_json::to_vec_pretty(&self.file).expect("state serialises");
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)
            .map_err(err)?;
        f.write_all(&text).map_err(err)?;
        f.sync_all().map_err(err)?;
        std::fs::rename(&tmp, &self.path).map_err(err)?;
        if let Some(dir) = self.path.parent() {
            std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(err)?;
        }
        Ok(())
    }

    /// Undoes everything, in the order that can succeed: thaw, move processes back, restore
    /// I/O priorities and knobs, remove created groups (deepest first). Every step is tried;
    /// failures are returned as messages (a process that exited meanwhile is not a failure).
    /// The state file is removed when nothing failed.
    pub fn restore(self) -> Vec<String> {
        let mut problems = Vec::new();
        let root = self.root.clone();
        let entries = &self.file.entries;
        let alive = |pid: i32, start: u64| procfs::stat(&root, pid).map(|s| s.start_time == start).unwrap_or(false);

        for e in entries {
            if let Entry::Frozen { dir, version } = e {
                let g = Cgroup::new(dir, *version);
                if g.exists() {
                    if let Err(err) = g.set_knob(Knob::Freeze, 0) {
                        problems.push(err.to_string());
                    }
                }
            }
        }
        for e in entries {
            if let Entry::Moved { pid, start_time, original, version } = e {
                if alive(*pid, *start_time) {
                    if let Err(err) = Cgroup::new(original, *version).add_proc(*pid) {
                        if !err.is_not_found() {
                            problems.push(err.to_string());
                        }
                    }
                }
            }
        }
        if root == Path::new("/") {
            for e in entries {
                if let Entry::Ioprio { tid, start_time, original } = e {
                    // A thread's start time is in its own /proc/TID/stat (threads have one).
                    if alive(*tid, *start_time) {
                        if let Err(err) = ioprio::set(*tid, *original) {
                            if !err.is_not_found() {
                                problems.push(err.to_string());
                            }
                        }
                    }
                }
            }
        }
        for e in entries.iter().rev() {
            match e {
                Entry::Knob { path, original } => {
                    if let Err(err) = forefront_sysfs::write_value(path, original) {
                        problems.push(err.to_string());
                    }
                }
                Entry::Subtree { path, added } => {
                    let text: Vec<String> = added.iter().map(|c| format!("-{c}")).collect();
                    if let Err(err) = forefront_sysfs::write_value(path, &text.join(" ")) {
                        problems.push(err.to_string());
                    }
                }
                _ => {}
            }
        }
        // Created groups, deepest first: members not moved back above (children forked inside
        // the group after it was made, processes the journal missed) go to the hierarchy root.
        let mut created: Vec<(&PathBuf, &Version, &PathBuf)> = entries
            .iter()
            .filter_map(|e| match e {
                Entry::Created { dir, version, mount } => Some((dir, version, mount)),
                _ => None,
            })
            .collect();
        created.sort_by_key(|(d, _, _)| std::cmp::Reverse(d.components().count()));
        for (dir, version, mount) in created {
            let g = Cgroup::new(dir, *version);
            if !g.exists() {
                continue;
            }
            // A member may fork between our reading the members and removing the group (the
            // child is born inside it), or a task may still be exiting: empty it and retry the
            // removal for up to ~200 ms before reporting it.
            let mut last_err = None;
            for _attempt in 0..100 {
                if forefront_sysfs::cgroup::is_cgroupfs(dir) {
                    let fallback = Cgroup::new(mount, *version);
                    if let Ok(pids) = g.procs() {
                        for pid in pids {
                            if let Err(err) = fallback.add_proc(pid) {
                                if !err.is_not_found() {
                                    problems.push(err.to_string());
                                }
                            }
                        }
                    }
                }
                match g.remove() {
                    Ok(()) => {
                        last_err = None;
                        break;
                    }
                    Err(err) => last_err = Some(err),
                }
                if !forefront_sysfs::cgroup::is_cgroupfs(dir) {
                    break; // a fake tree in tests: no member can appear by itself
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            if let Some(err) = last_err {
                problems.push(err.to_string());
            }
        }
        if problems.is_empty() {
            let _ = std::fs::remove_file(&self.path);
            if self.made_dir {
                // Made by this journal: gone with it (if nothing else was put there).
                let _ = self.path.parent().map(std::fs::remove_dir);
            }
        }
        problems
    }
}

fn kind_of(m: &std::fs::Metadata) -> &'static str {
    let t = m.file_type();
    if t.is_symlink() {
        "symbolic link"
    } else if t.is_dir() {
        "directory"
    } else if t.is_file() {
        "regular file"
    } else {
        "special file"
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_journal_lock_excludes_a_second_holder_until_dropped_and_a_dead_holder_frees_it() {
        let d = tempfile::tempdir().unwrap();
        let state = d.path().join("st/state.json");
        // `agent restore` with no directory: nothing to lock, nothing made.
        assert!(JournalLock::acquire(&state, false).unwrap().is_none());
        assert!(!state.parent().unwrap().exists());
        let first = JournalLock::acquire(&state, true).unwrap().unwrap();
        let lock = JournalLock::path_for(&state);
        assert_eq!(std::fs::read_to_string(&lock).unwrap().trim(), std::process::id().to_string());
        // A second open file description conflicts, as another process's would.
        for create in [true, false] {
            match JournalLock::acquire(&state, create) {
                Err(StateError::Locked { holder, lock: l, .. }) => {
                    assert_eq!(holder, format!("agent pid {}", std::process::id()));
                    assert_eq!(l, lock);
                }
                other => panic!("second holder not refused: {other:?}"),
            }
        }
        drop(first);
        assert!(!lock.exists(), "removed on drop");
        assert!(!state.parent().unwrap().exists(), "the directory it made goes too");
        // A holder that dies (here: a child process holding it through `flock`) frees it.
        std::fs::create_dir_all(state.parent().unwrap()).unwrap();
        std::fs::set_permissions(state.parent().unwrap(), std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        // The holder here: a shell (exec'd into `sleep`) that took the lock through flock(1)
        // on a descriptor it keeps; killing it frees the lock.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "exec 9>>\"$0\" && flock -x 9 && echo locked && exec sleep 30", lock.to_str().unwrap()])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut said = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut said).unwrap();
        if said.trim() != "locked" {
            let _ = child.kill();
            child.wait().unwrap();
            eprintln!("SKIPPED the dead-holder half: sh or flock(1) missing");
            return;
        }
        match JournalLock::acquire(&state, false) {
            Err(StateError::Locked { holder, .. }) => assert!(holder.contains("not written its pid"), "{holder}"),
            other => panic!("a lock held by another process was not seen: {other:?}"),
        }
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(JournalLock::acquire(&state, false).unwrap().is_some(), "a dead holder's lock is free");
    }

    #[test]
    fn a_restoring_holder_is_waited_for_and_an_agent_is_not() {
        use std::time::Duration;
        let d = tempfile::tempdir().unwrap();
        let state = d.path().join("st/state.json");
        let me = std::process::id();
        let never = |_| false;
        // A restoring holder (the watchdog of a dead agent) that lets go after 100 ms.
        let restorer = JournalLock::acquire_waiting(&state, true, true, Duration::ZERO, never).unwrap().unwrap();
        let text = std::fs::read_to_string(JournalLock::path_for(&state)).unwrap();
        assert_eq!(text.trim(), format!("{me} restoring"));
        match JournalLock::acquire(&state, true) {
            Err(StateError::Locked { holder, holder_pid, restoring: true, .. }) => {
                assert_eq!(holder_pid, Some(me));
                assert!(holder.contains("restoring the journal"), "{holder}");
            }
            other => panic!("a restoring holder not seen: {other:?}"),
        }
        let t0 = std::time::Instant::now();
        let h = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            drop(restorer);
        });
        let agent = JournalLock::acquire_waiting(&state, true, false, Duration::from_secs(10), never).unwrap().unwrap();
        h.join().unwrap();
        assert!(t0.elapsed() >= Duration::from_millis(100), "waited for the restorer");
        // An agent holding it is refused at once, unless `wait_for` names it (a dead agent
        // whose lock the kernel is about to drop), and then only for `wait`.
        let t0 = std::time::Instant::now();
        match JournalLock::acquire_waiting(&state, false, true, Duration::from_secs(10), never) {
            Err(StateError::Locked { holder_pid: Some(p), restoring: false, .. }) => assert_eq!(p, me),
            other => panic!("a live agent's lock not refused: {other:?}"),
        }
        assert!(t0.elapsed() < Duration::from_secs(5));
        let t0 = std::time::Instant::now();
        let waited = JournalLock::acquire_waiting(&state, false, true, Duration::from_millis(200), |p| p == me);
        assert!(matches!(waited, Err(StateError::Locked { .. })), "{waited:?}");
        assert!(t0.elapsed() >= Duration::from_millis(200), "waited up to `wait` for the named holder");
        drop(agent);
    }

    /// The window between taking the lock and writing the pid: the file is empty, or still
    /// names the holder before (killed: its text stays). A holder the file does not name is
    /// waited for; before this, a new agent started right after its predecessor was killed
    /// was refused while the predecessor's watchdog was taking the lock to restore.
    #[test]
    fn a_holder_that_has_not_written_its_pid_yet_is_waited_for() {
        use std::time::Duration;
        let d = tempfile::tempdir().unwrap();
        let state = d.path().join("st/state.json");
        let never = |_| false;
        let mut dead = std::process::Command::new("true").spawn().unwrap();
        let dead_pid = dead.id();
        dead.wait().unwrap();
        assert!(!pid_alive(dead_pid) && pid_alive(std::process::id()));
        for text in [String::new(), format!("{dead_pid}\n")] {
            let holder = JournalLock::acquire(&state, true).unwrap().unwrap();
            std::fs::write(JournalLock::path_for(&state), &text).unwrap();
            match JournalLock::acquire(&state, true) {
                Err(StateError::Locked { .. }) => {}
                other => panic!("held lock with {text:?} not seen: {other:?}"),
            }
            let t0 = std::time::Instant::now();
            let refused = JournalLock::acquire_waiting(&state, true, false, Duration::from_millis(150), never);
            assert!(matches!(refused, Err(StateError::Locked { .. })), "{refused:?}");
            assert!(t0.elapsed() >= Duration::from_millis(150), "{text:?}: refused at once, not waited for");
            let h = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                drop(holder);
            });
            let got = JournalLock::acquire_waiting(&state, true, false, Duration::from_secs(10), never);
            h.join().unwrap();
            assert!(got.unwrap().is_some(), "{text:?}");
        }
    }

    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A fake root with a v2 mount at sys/fs/cgroup and a v1 cpu hierarchy, the bounds of an
    /// agent with group `forefront` there, and the v2 mount.
    fn fake_root() -> (tempfile::TempDir, Bounds, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        std::fs::create_dir_all(r.join("proc/self")).unwrap();
        std::fs::write(
            r.join("proc/self/mountinfo"),
            "30 24 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n31 24 0:27 / /v1/cpu rw - cgroup cgroup rw,cpu\n",
        )
        .unwrap();
        let cg = r.join("sys/fs/cgroup");
        std::fs::create_dir_all(&cg).unwrap();
        let b = Bounds::read(r, "forefront").unwrap();
        (t, b, cg)
    }

    #[test]
    fn record_is_durable_and_deduplicated() {
        let (t, _b, cg) = fake_root();
        let p = t.path().join("run/state.json");
        let mut j = Journal::create(&p, t.path()).unwrap();
        let e = Entry::Knob { path: cg.join("forefront/bg/cpu.weight"), original: "100".into() };
        j.record([e.clone(), e.clone()]).unwrap();
        let again = Journal::open_existing(&p, t.path(), "forefront").unwrap().unwrap();
        assert_eq!(again.entries(), &[e]);
        assert_eq!(again.writer_pid(), std::process::id());
        assert!(!p.with_extension("tmp").exists());
        let mode = |p: &Path| std::fs::metadata(p).unwrap().mode() & 0o7777;
        assert_eq!(mode(&t.path().join("run")), 0o700, "the directory the journal made is private");
        assert_eq!(mode(&p), 0o600);
    }

    #[test]
    fn restore_on_a_fake_v2_tree() {
        let (t, _b, cg) = fake_root();
        std::fs::write(cg.join("cgroup.subtree_control"), "memory").unwrap();
        let top = cg.join("forefront");
        std::fs::create_dir_all(&top).unwrap();
        let knob = top.join("io.weight");
        std::fs::write(&knob, "changed").unwrap();
        let bg = Cgroup::new(cg.join("forefront/bg"), Version::V2);
        std::fs::create_dir_all(&bg.dir).unwrap();
        std::fs::write(bg.dir.join("cgroup.freeze"), "1").unwrap();

        let p = t.path().join("run/state.json");
        let mut j = Journal::create(&p, t.path()).unwrap();
        j.record([
            Entry::Subtree { path: cg.join("cgroup.subtree_control"), added: vec!["cpu".into()] },
            Entry::Created { dir: bg.dir.clone(), version: Version::V2, mount: cg.clone() },
            Entry::Knob { path: knob.clone(), original: "orig".into() },
            Entry::Frozen { dir: bg.dir.clone(), version: Version::V2 },
        ])
        .unwrap();
        std::mem::forget(j);
        // As after a crash: reopen from disk and restore.
        let j = Journal::open_existing(&p, t.path(), "forefront").unwrap().unwrap();
        let problems = j.restore();
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(std::fs::read_to_string(&knob).unwrap(), "orig");
        assert_eq!(std::fs::read_to_string(cg.join("cgroup.subtree_control")).unwrap(), "-cpu");
        assert!(!bg.dir.exists(), "created groups removed");
        assert!(!p.exists(), "a clean restore removes the state file");
        assert!(t.path().join("run").exists(), "a directory the restoring run did not make stays");
    }

    #[test]
    fn a_clean_restore_removes_the_directory_the_journal_made() {
        let (t, _b, _) = fake_root();
        let p = t.path().join("private/state.json");
        let j = Journal::create(&p, t.path()).unwrap();
        assert!(j.restore().is_empty());
        assert!(!t.path().join("private").exists());
    }

    #[test]
    fn corrupt_state_is_reported_with_path() {
        let (t, _b, _) = fake_root();
        let p = t.path().join("s.json");
        std::fs::write(&p, "{ not json").unwrap();
        let e = Journal::open_existing(&p, t.path(), "forefront").unwrap_err().to_string();
        assert!(e.contains("s.json is corrupt"), "{e}");
        assert!(Journal::open_existing(&t.path().join("none"), t.path(), "forefront").unwrap().is_none());
        assert!(Journal::open_existing(&t.path().join("nodir/none"), t.path(), "forefront").unwrap().is_none());
    }

    #[test]
    fn failed_restore_keeps_the_file_and_says_why() {
        let (t, _b, cg) = fake_root();
        let p = t.path().join("s.json");
        let mut j = Journal::create(&p, t.path()).unwrap();
        j.record([Entry::Knob { path: cg.join("forefront/fg/cpu.weight"), original: "1".into() }]).unwrap();
        let problems = j.restore();
        assert_eq!(problems.len(), 1);
        assert!(problems[0].contains("forefront/fg/cpu.weight"), "{problems:?}");
        assert!(p.exists());
    }

    /// Every entry kind, in bounds and out: what the agent writes is accepted, anything else
    /// refuses the whole journal and names the entry.
    #[test]
    fn entries_outside_what_the_agent_changes_refuse_the_journal() {
        let (t, b, cg) = fake_root();
        let r = t.path();
        let v1 = r.join("v1/cpu");
        let ok = [
            Entry::Created { dir: cg.join("forefront"), version: Version::V2, mount: cg.clone() },
            Entry::Created { dir: v1.join("forefront/bg"), version: Version::V1, mount: v1.clone() },
            Entry::Frozen { dir: cg.join("forefront/bg"), version: Version::V2 },
            Entry::Knob { path: v1.join("forefront/fg/cpu.shares"), original: "1024".into() },
            Entry::Knob { path: cg.join("forefront/bg/io.bfq.weight"), original: "default 100\n8:0 200".into() },
            Entry::Knob { path: r.join("proc/sys/vm/dirty_writeback_centisecs"), original: "500".into() },
            Entry::Knob { path: r.join("sys/block/vda/queue/nr_requests"), original: "256".into() },
            Entry::Knob { path: r.join("sys/block/vda/queue/iosched/strict_guarantees"), original: "0".into() },
            Entry::Subtree { path: cg.join("cgroup.subtree_control"), added: vec!["cpu".into(), "io".into()] },
            Entry::Subtree { path: cg.join("forefront/cgroup.subtree_control"), added: vec!["memory".into()] },
            Entry::Moved { pid: 4242, start_time: 1, original: cg.join("user.slice/app.scope"), version: Version::V2 },
            Entry::Moved { pid: 4242, start_time: 1, original: v1.clone(), version: Version::V1 },
            Entry::Ioprio { tid: 4242, start_time: 1, original: IoPrio { class: 2, level: 4 } },
        ];
        for e in &ok {
            assert_eq!(b.check(e), Ok(()), "{e:?}");
        }
        let bad = [
            (Entry::Knob { path: r.join("etc/passwd"), original: "root::0:0::/:/bin/sh".into() }, "neither a knob"),
            (Entry::Knob { path: "/etc/shadow".into(), original: "x".into() }, "neither a knob"),
            (Entry::Knob { path: cg.join("user.slice/cpu.weight"), original: "1".into() }, "neither a knob"),
            (Entry::Knob { path: cg.join("forefront/bg/cgroup.procs"), original: "1".into() }, "neither a knob"),
            (Entry::Knob { path: r.join("proc/sys/kernel/core_pattern"), original: "|/tmp/x".into() }, "neither a knob"),
            (Entry::Knob { path: r.join("sys/block/vda/queue/scheduler"), original: "none".into() }, "neither a knob"),
            (Entry::Knob { path: r.join("sys/block/vda/vda1/queue/nr_requests"), original: "1".into() }, "neither a knob"),
            (Entry::Knob { path: r.join("sys/block/vda/queue/iosched/slice_idle"), original: "8".into() }, "neither a knob"),
            (Entry::Knob { path: r.join("sys/block/vda/queue/strict_guarantees"), original: "0".into() }, "neither a knob"),
            (Entry::Knob { path: r.join("sys/block/../../etc/queue/nr_requests"), original: "1".into() }, "'..'"),
            (Entry::Knob { path: cg.join("forefront/../../../etc/x/cpu.weight"), original: "1".into() }, "'..'"),
            (Entry::Knob { path: cg.join("forefront/bg/cpu.weight"), original: "1\u{1b}[2J".into() }, "control"),
            (Entry::Created { dir: cg.join("user.slice"), version: Version::V2, mount: cg.clone() }, "not one of the agent's"),
            (
                Entry::Created { dir: r.join("etc/forefront"), version: Version::V2, mount: r.join("etc") },
                "not a v2 cgroup mount",
            ),
            (Entry::Created { dir: v1.join("forefront"), version: Version::V2, mount: v1.clone() }, "not a v2 cgroup mount"),
            (Entry::Frozen { dir: cg.join("system.slice"), version: Version::V2 }, "not one of the agent's"),
            (
                Entry::Subtree { path: r.join("etc/cgroup.subtree_control"), added: vec!["cpu".into()] },
                "not cgroup.subtree_control",
            ),
            (Entry::Subtree { path: cg.join("cgroup.subtree_control"), added: vec!["pids".into()] }, "not one the agent enables"),
            (Entry::Moved { pid: 1, start_time: 1, original: cg.clone(), version: Version::V2 }, "pid 1"),
            (Entry::Moved { pid: 7, start_time: 1, original: r.join("tmp"), version: Version::V2 }, "not a group under"),
            (Entry::Ioprio { tid: 0, start_time: 1, original: IoPrio::IDLE }, "out of range"),
            (Entry::Ioprio { tid: 9, start_time: 1, original: IoPrio { class: 9, level: 0 } }, "out of range"),
        ];
        for (e, want) in &bad {
            let why = b.check(e).unwrap_err();
            assert!(why.contains(want), "{e:?}: {why}");
        }
        // Planted on disk (by root here, as a compromised writer would): refused whole, the
        // named file untouched by the restore that never runs.
        let victim = r.join("etc/passwd");
        std::fs::create_dir_all(victim.parent().unwrap()).unwrap();
        std::fs::write(&victim, "root:x:0:0").unwrap();
        let p = r.join("run/state.json");
        let mut j = Journal::create(&p, r).unwrap();
        j.record(ok.iter().cloned().chain([bad[0].0.clone()])).unwrap();
        std::mem::forget(j);
        let e = Journal::open_existing(&p, r, "forefront").unwrap_err().to_string();
        assert!(e.contains(&format!("entry {} (knob)", ok.len())) && e.contains("etc/passwd") && e.contains("refused"), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root:x:0:0");
    }

    #[test]
    fn a_state_directory_others_could_write_is_refused() {
        let (t, _b, _) = fake_root();
        let r = t.path();
        // World-writable (sticky or not), group-writable, a symlink: refused, nothing written.
        for (name, mode) in [("ww", 0o777), ("sticky", 0o1777), ("gw", 0o770)] {
            let d = r.join(name);
            std::fs::create_dir(&d).unwrap();
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode)).unwrap();
            let e = Journal::create(&d.join("state.json"), r).unwrap_err().to_string();
            assert!(e.contains("group or others may write it") && e.contains("refused"), "{name}: {e}");
            assert!(!d.join("state.json").exists() && !d.join("state.tmp").exists());
            let e = Journal::open_existing(&d.join("state.json"), r, "forefront").unwrap_err().to_string();
            assert!(e.contains("group or others may write it"), "{name}: {e}");
        }
        let real = r.join("real");
        std::fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&real, r.join("link")).unwrap();
        let e = Journal::create(&r.join("link/state.json"), r).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        assert!(std::fs::read_dir(&real).unwrap().next().is_none(), "nothing written through the link");
        // A directory below a world-writable, non-sticky ancestor: refused.
        let open = r.join("open");
        std::fs::create_dir_all(open.join("private")).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        std::fs::set_permissions(open.join("private"), std::fs::Permissions::from_mode(0o700)).unwrap();
        let e = Journal::create(&open.join("private/state.json"), r).unwrap_err().to_string();
        assert!(e.contains("ancestor") && e.contains("not sticky"), "{e}");
        // Below a sticky one (like /tmp, /dev/shm): a directory of its own is accepted.
        let sticky = r.join("sticky");
        let j = Journal::create(&sticky.join("own/state.json"), r).unwrap();
        assert!(j.restore().is_empty());
    }

    #[test]
    fn a_planted_temporary_file_or_journal_link_is_never_followed() {
        let (t, _b, _) = fake_root();
        let r = t.path();
        let victim = r.join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let p = r.join("run/state.json");
        let mut j = Journal::create(&p, r).unwrap();
        // A symlink where the temporary file goes: the next write refuses, the target is intact.
        std::os::unix::fs::symlink(&victim, p.with_extension("tmp")).unwrap();
        let e = j.record([Entry::Ioprio { tid: 7, start_time: 1, original: IoPrio::IDLE }]).unwrap_err().to_string();
        assert!(e.contains("symbolic link") && e.contains("refused"), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        std::fs::remove_file(p.with_extension("tmp")).unwrap();
        // A leftover temporary file of our own (a crash between create and rename) is replaced.
        std::fs::write(p.with_extension("tmp"), "half-written").unwrap();
        j.record([Entry::Ioprio { tid: 8, start_time: 1, original: IoPrio::IDLE }]).unwrap();
        // A symlink in place of the journal: not read through.
        std::mem::forget(j);
        std::fs::remove_file(&p).unwrap();
        std::os::unix::fs::symlink(&victim, &p).unwrap();
        let e = Journal::open_existing(&p, r, "forefront").unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        // A journal others may write: refused.
        std::fs::remove_file(&p).unwrap();
        std::fs::write(&p, r#"{"agent_pid":1,"entries":[]}"#).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o666)).unwrap();
        let e = Journal::open_existing(&p, r, "forefront").unwrap_err().to_string();
        assert!(e.contains("mode 666"), "{e}");
    }
}
