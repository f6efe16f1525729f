//! The watchdog: a separate process that outlives the agent, thaws the background group when
//! the agent dies (EOF on its stdin pipe) or when a pause outlives its deadline, and undoes
//! everything else a dead agent left.
//!
//! The agent tells it, over the pipe, `F <ms>` when it freezes (deadline in ms from now) and
//! `T` when it thaws. Before `F`, a line `K <path> <text>` names a setting the pause holds
//! (`pause.hold_writeback`) and the text that restores it; the watchdog writes it back when it
//! thaws, and forgets it at `T` (the agent restored it). Whatever happens to the agent —
//! SIGKILL, a panic, a hang — background work is frozen, and write-back held, for at most the
//! deadline, and at most a few ms after the agent's death.
//!
//! An agent that stops cleanly restores everything itself and says `X` before it closes the
//! pipe. EOF without `X` means the agent died: after the thaw, [`restore_left`] undoes what its
//! journal lists (processes moved back to their groups, their threads' I/O priorities, knobs,
//! the groups removed), as `agent restore` would. Without it, a dead agent's background would
//! stay in the idle I/O class and its groups — behind every other process, with no agent left
//! to move a process that comes to the foreground — until someone restarted the agent.
//!
//! The agent starts it in a session of its own with `oom_score_adj` -1000 (where allowed), so a
//! kill of the agent's process group or the OOM killer does not take both, and replaces it if it
//! dies alone ([`crate::daemon::Agent::tick`]).

use std::io::Read;
use std::os::fd::AsFd;
use std::path::Path;
use std::time::{Duration, Instant};

use forefront_sysfs::{Cgroup, Knob};

use crate::state::{Journal, JournalLock, StateError};

/// Why [`run`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// EOF after `X`: the agent stopped cleanly and restored everything itself.
    Stopped,
    /// EOF without `X`: the agent died; its journal is for [`restore_left`].
    AgentGone,
    /// `poll` failed: the watchdog thawed and gives up (the agent replaces it).
    PollError,
}

/// How long [`restore_left`] waits for the dead agent's journal lock (the kernel drops it as
/// the agent exits, around when the pipe closes) or for another restorer to finish.
pub const LOCK_WAIT: Duration = Duration::from_secs(5);

/// Runs until `input` reaches EOF; thaws `groups` on a missed deadline and at EOF.
/// `log` receives one line per action.
pub fn run(mut input: impl Read + AsFd, groups: &[Cgroup], mut log: impl FnMut(&str)) -> Exit {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let thaw = |why: &str, held: &mut Vec<(String, String)>, log: &mut dyn FnMut(&str)| {
        for g in groups.iter().filter(|g| g.exists()) {
            match g.set_knob(Knob::Freeze, 0) {
                Ok(_) => log(&format!("watchdog: thawed {} ({why})", g.dir.display())),
                Err(e) if e.is_not_found() => {}
                Err(e) => log(&format!("watchdog: {e}")),
            }
        }
        for (path, text) in held.drain(..) {
            match forefront_sysfs::write_value(std::path::Path::new(&path), &text) {
                Ok(_) => log(&format!("watchdog: restored {path} = {text} ({why})")),
                Err(e) => log(&format!("watchdog: {e}")),
            }
        }
    };
    let mut held: Vec<(String, String)> = vec![];
    let mut stopped = false;
    let mut deadline: Option<Instant> = None;
    let mut pending = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        let timeout = match deadline {
            None => PollTimeout::NONE,
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now()).as_millis().min(60_000) as u16;
                PollTimeout::from(left)
            }
        };
        let ready = {
            let mut fds = [PollFd::new(input.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, timeout) {
                Ok(n) => n > 0,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => {
                    log(&format!("watchdog: poll failed ({e}); thawing and exiting"));
                    thaw("poll error", &mut held, &mut log);
                    return Exit::PollError;
                }
            }
        };
        if !ready {
            if deadline.is_some_and(|d| Instant::now() >= d) {
                thaw("pause deadline passed", &mut held, &mut log);
                deadline = None;
            }
            continue;
        }
        let n = match input.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => 0,
        };
        if n == 0 {
            if stopped {
                thaw("agent stopped", &mut held, &mut log);
                return Exit::Stopped;
            }
            thaw("agent gone", &mut held, &mut log);
            return Exit::AgentGone;
        }
        pending.extend_from_slice(&buf[..n]);
        while let Some(nl) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=nl).collect();
            let line = String::from_utf8_lossy(&line);
            if let Some((path, text)) = line.trim().strip_prefix("K ").and_then(|rest| rest.rsplit_once(' ')) {
                held.push((path.to_owned(), text.to_owned()));
                continue;
            }
            let mut words = line.split_whitespace();
            match (words.next(), words.next().and_then(|w| w.parse::<u64>().ok())) {
                (Some("F"), Some(ms)) => deadline = Some(Instant::now() + Duration::from_millis(ms)),
                (Some("T"), _) => {
                    deadline = None;
                    held.clear();
                }
                (Some("X"), _) => stopped = true,
                _ => log(&format!("watchdog: ignoring {:?}", line.trim())),
            }
        }
    }
}

/// Undoes what the agent with pid `agent_pid`, now dead, left in its journal at `state` (read
/// as [`Journal::open_existing`] reads it, for an agent with `root` and `group`), holding the
/// journal's lock as a restorer. Nothing when there is no journal (the agent stopped cleanly,
/// or a restarted agent or `agent restore` was first); a journal another live agent holds is
/// left to it. `log` receives one line per action and problem.
pub fn restore_left(state: &Path, root: &Path, group: &str, agent_pid: u32, mut log: impl FnMut(&str)) {
    if std::fs::symlink_metadata(state).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
        return;
    }
    let _lock = match JournalLock::acquire_waiting(state, false, true, LOCK_WAIT, |p| p == agent_pid) {
        Ok(Some(l)) => l,
        Ok(None) => return,
        Err(StateError::Locked { holder, .. }) => {
            log(&format!("watchdog: {} is held by {holder}: left to it", state.display()));
            return;
        }
        Err(e) => {
            log(&format!("watchdog: {e}"));
            return;
        }
    };
    match Journal::open_existing(state, root, group) {
        Ok(None) => {}
        Ok(Some(j)) => {
            let n = j.entries().len();
            let problems = j.restore();
            for p in &problems {
                log(&format!("watchdog: restore: {p}"));
            }
            log(&format!("watchdog: restored {n} change(s) left by agent pid {agent_pid}, {} problem(s)", problems.len()));
        }
        Err(e) => log(&format!("watchdog: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use forefront_sysfs::Version;
    use std::io::Write;

    fn frozen_fake_group() -> (tempfile::TempDir, Cgroup) {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("freezer.state"), "FROZEN").unwrap();
        let g = Cgroup::new(t.path(), Version::V1);
        (t, g)
    }

    #[test]
    fn thaws_on_eof() {
        let (_t, g) = frozen_fake_group();
        let (r, w) = nix::unistd::pipe().unwrap();
        let (r, mut w) = (std::fs::File::from(r), std::fs::File::from(w));
        let g2 = g.clone();
        let h = std::thread::spawn(move || run(r, &[g2], |_| {}));
        writeln!(w, "F 60000").unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert!(g.is_frozen().unwrap(), "still frozen while the agent lives");
        let t0 = Instant::now();
        drop(w);
        assert_eq!(h.join().unwrap(), Exit::AgentGone);
        assert!(!g.is_frozen().unwrap());
        assert!(t0.elapsed() < Duration::from_millis(500));
    }

    #[test]
    fn a_clean_stop_is_told_apart_from_a_death() {
        let (_t, g) = frozen_fake_group();
        let (r, w) = nix::unistd::pipe().unwrap();
        let (r, mut w) = (std::fs::File::from(r), std::fs::File::from(w));
        let g2 = g.clone();
        let h = std::thread::spawn(move || run(r, &[g2], |_| {}));
        writeln!(w, "F 60000\nT\nX").unwrap();
        drop(w);
        assert_eq!(h.join().unwrap(), Exit::Stopped);
    }

    /// A fake root as a dead agent with group `forefront` leaves it: a knob it changed, a
    /// group it made, its journal listing both.
    fn dead_agents_leftovers() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
        use crate::state::Entry;
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        std::fs::create_dir_all(r.join("proc/self")).unwrap();
        std::fs::write(r.join("proc/self/mountinfo"), "30 24 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n").unwrap();
        let cg = r.join("sys/fs/cgroup");
        let bg = cg.join("forefront/bg");
        std::fs::create_dir_all(&bg).unwrap();
        let knob = cg.join("forefront/io.weight");
        std::fs::write(&knob, "changed").unwrap();
        let state = r.join("run/state.json");
        let mut j = Journal::create(&state, r).unwrap();
        j.record([
            Entry::Created { dir: bg.clone(), version: Version::V2, mount: cg.clone() },
            Entry::Knob { path: knob.clone(), original: "orig".into() },
        ])
        .unwrap();
        std::mem::forget(j); // as if killed
        (t, state, knob, bg)
    }

    #[test]
    fn restore_left_undoes_a_dead_agents_journal() {
        let (t, state, knob, bg) = dead_agents_leftovers();
        let mut lines = vec![];
        restore_left(&state, t.path(), "forefront", 1, |l| lines.push(l.to_owned()));
        assert_eq!(std::fs::read_to_string(&knob).unwrap(), "orig", "{lines:?}");
        assert!(!bg.exists(), "the group it made is removed");
        assert!(!state.exists(), "a clean restore removes the journal");
        assert!(lines.iter().any(|l| l.contains("restored 2 change(s) left by agent pid 1")), "{lines:?}");
        // Nothing left: nothing done, nothing said.
        lines.clear();
        restore_left(&state, t.path(), "forefront", 1, |l| lines.push(l.to_owned()));
        assert!(lines.is_empty(), "{lines:?}");
    }

    #[test]
    fn restore_left_leaves_a_live_agents_journal_alone() {
        let (t, state, knob, bg) = dead_agents_leftovers();
        // A new agent (not the dead one, pid 1 here) took the journal first: it restores it.
        let agent = JournalLock::acquire(&state, false).unwrap().unwrap();
        let mut lines = vec![];
        let t0 = Instant::now();
        restore_left(&state, t.path(), "forefront", 1, |l| lines.push(l.to_owned()));
        assert!(t0.elapsed() < LOCK_WAIT, "not waited for");
        assert_eq!(std::fs::read_to_string(&knob).unwrap(), "changed");
        assert!(bg.exists() && state.exists());
        assert!(lines.iter().any(|l| l.contains("left to it")), "{lines:?}");
        drop(agent);
    }

    #[test]
    fn thaws_at_deadline_while_agent_lives() {
        let (_t, g) = frozen_fake_group();
        let (r, w) = nix::unistd::pipe().unwrap();
        let (r, mut w) = (std::fs::File::from(r), std::fs::File::from(w));
        let g2 = g.clone();
        let h = std::thread::spawn(move || run(r, &[g2], |_| {}));
        writeln!(w, "F 100").unwrap();
        std::thread::sleep(Duration::from_millis(400));
        assert!(!g.is_frozen().unwrap(), "deadline enforced outside the agent");
        // A thaw message cancels a deadline: freeze again by hand, send F then T.
        g.set_knob(Knob::Freeze, 1).unwrap();
        writeln!(w, "F 100\nT").unwrap();
        std::thread::sleep(Duration::from_millis(300));
        assert!(g.is_frozen().unwrap());
        drop(w);
        h.join().unwrap();
        assert!(!g.is_frozen().unwrap());
    }

    #[test]
    fn restores_held_settings_when_the_agent_dies_but_not_after_a_thaw() {
        let (t, g) = frozen_fake_group();
        let (a, b) = (t.path().join("dirty_writeback_centisecs"), t.path().join("dirty_expire_centisecs"));
        std::fs::write(&a, "0").unwrap();
        std::fs::write(&b, "3300").unwrap();
        let (r, w) = nix::unistd::pipe().unwrap();
        let (r, mut w) = (std::fs::File::from(r), std::fs::File::from(w));
        let g2 = g.clone();
        let h = std::thread::spawn(move || run(r, &[g2], |_| {}));
        // A pause the agent ended (and restored) itself: T forgets its setting...
        writeln!(w, "K {} 500\nF 60000\nT", a.display()).unwrap();
        // ...and one it does not end: the agent's death restores that one only.
        writeln!(w, "K {} 3000\nF 60000", b.display()).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "3300", "held while the agent lives");
        drop(w);
        h.join().unwrap();
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "3000");
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "0", "forgotten at T");
        assert!(!g.is_frozen().unwrap());
    }
}
