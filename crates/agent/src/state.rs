//! The crash-safe journal of everything the agent changed, and how to undo it.
//!
//! Invariant: an entry is on disk (written to a temporary file, fsynced, renamed over the state
//! file, directory fsynced) *before* the change it describes is made. So after any crash the
//! file lists a superset of what is changed, and [`Journal::restore`] undoes it.

use std::path::{Path, PathBuf};

use forefront_sysfs::{ioprio, ioprio::IoPrio, procfs, Cgroup, Knob, Version};
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
}

impl Journal {
    /// A fresh, empty journal at `path` (written immediately).
    pub fn create(path: &Path, root: &Path) -> Result<Self, StateError> {
        let mut j =
            Journal { path: path.into(), root: root.into(), file: File { agent_pid: std::process::id(), entries: vec![] } };
        j.flush()?;
        Ok(j)
    }

    /// An empty journal that has not written its file (what remains after a restore).
    pub fn detached(path: &Path, root: &Path) -> Self {
        Journal { path: path.into(), root: root.into(), file: File { agent_pid: std::process::id(), entries: vec![] } }
    }

    /// A journal left by an earlier run, if any.
    pub fn open_existing(path: &Path, root: &Path) -> Result<Option<Self>, StateError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(StateError::Read { path: path.into(), source }),
        };
        let file: File =
            serde_json::from_str(&text).map_err(|e| StateError::Corrupt { path: path.into(), message: e.to_string() })?;
        Ok(Some(Journal { path: path.into(), root: root.into(), file }))
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

    fn flush(&mut self) -> Result<(), StateError> {
        use std::io::Write;
        let err = |source| StateError::Write { path: self.path.clone(), source };
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(err)?;
        }
        let tmp = self.path.with_extension("tmp");
        let text = serde_json::to_vec_pretty(&self.file).expect("state serialises");
        let mut f = std::fs::File::create(&tmp).map_err(err)?;
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
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_is_durable_and_deduplicated() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("run/state.json");
        let mut j = Journal::create(&p, t.path()).unwrap();
        let e = Entry::Knob { path: t.path().join("k"), original: "1".into() };
        j.record([e.clone(), e.clone()]).unwrap();
        let again = Journal::open_existing(&p, t.path()).unwrap().unwrap();
        assert_eq!(again.entries(), &[e]);
        assert_eq!(again.writer_pid(), std::process::id());
        assert!(!p.with_extension("tmp").exists());
    }

    #[test]
    fn restore_on_a_fake_v2_tree() {
        let t = tempfile::tempdir().unwrap();
        let cg = t.path().join("sys/fs/cgroup");
        std::fs::create_dir_all(&cg).unwrap();
        std::fs::write(cg.join("cgroup.subtree_control"), "memory").unwrap();
        let knob = cg.join("io.cost.qos");
        std::fs::write(&knob, "changed").unwrap();
        let bg = Cgroup::new(cg.join("forefront/bg"), Version::V2);
        std::fs::create_dir_all(&bg.dir).unwrap();
        std::fs::write(bg.dir.join("cgroup.freeze"), "1").unwrap();

        let p = t.path().join("state.json");
        let mut j = Journal::create(&p, t.path()).unwrap();
        j.record([
            Entry::Created { dir: cg.join("forefront"), version: Version::V2, mount: cg.clone() },
            Entry::Subtree { path: cg.join("cgroup.subtree_control"), added: vec!["cpu".into()] },
            Entry::Created { dir: bg.dir.clone(), version: Version::V2, mount: cg.clone() },
            Entry::Knob { path: knob.clone(), original: "orig".into() },
            Entry::Frozen { dir: bg.dir.clone(), version: Version::V2 },
        ])
        .unwrap();
        drop(j);
        // As after a crash: reopen from disk and restore.
        let j = Journal::open_existing(&p, t.path()).unwrap().unwrap();
        let problems = j.restore();
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(std::fs::read_to_string(&knob).unwrap(), "orig");
        assert_eq!(std::fs::read_to_string(cg.join("cgroup.subtree_control")).unwrap(), "-cpu");
        assert!(!cg.join("forefront").exists(), "created groups removed, deepest first");
        assert!(!p.exists(), "a clean restore removes the state file");
    }

    #[test]
    fn corrupt_state_is_reported_with_path() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("s.json");
        std::fs::write(&p, "{ not json").unwrap();
        let e = Journal::open_existing(&p, t.path()).unwrap_err().to_string();
        assert!(e.contains("s.json is corrupt"), "{e}");
        assert!(Journal::open_existing(&t.path().join("none"), t.path()).unwrap().is_none());
    }

    #[test]
    fn failed_restore_keeps_the_file_and_says_why() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("s.json");
        let mut j = Journal::create(&p, t.path()).unwrap();
        j.record([Entry::Knob { path: t.path().join("no/such/dir/knob"), original: "1".into() }]).unwrap();
        let problems = j.restore();
        assert_eq!(problems.len(), 1);
        assert!(problems[0].contains("no/such/dir/knob"), "{problems:?}");
        assert!(p.exists());
    }
}
