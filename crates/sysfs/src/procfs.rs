//! Processes, threads, their cgroups and I/O counters from `<root>/proc`.

use std::path::{Path, PathBuf};

use crate::error::{read_to_string, Error, Result};

/// What forefront needs to know about one process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: i32,
    pub ppid: i32,
    /// Real uid (first field of `Uid:` in `status`).
    pub uid: u32,
    pub comm: String,
    /// Start time in clock ticks since boot: with the pid, it names a process uniquely (a
    /// recycled pid has a later start time), which guards restores against pid reuse.
    pub start_time: u64,
    /// Kernel threads have no memory map and are never managed.
    pub kernel_thread: bool,
    /// The state letter of field 3 (`R` running or runnable, `D` uninterruptible, mostly I/O,
    /// `S` sleeping, ...): of the process's main thread only.
    pub state: char,
}

fn proc_dir(root: &Path, pid: i32) -> PathBuf {
    root.join("proc").join(pid.to_string())
}

/// All pids in `<root>/proc`.
pub fn list_pids(root: &Path) -> Result<Vec<i32>> {
    let dir = root.join("proc");
    let rd = std::fs::read_dir(&dir).map_err(|source| Error::Read { path: dir.clone(), source })?;
    let mut pids: Vec<i32> = rd.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect();
    pids.sort_unstable();
    Ok(pids)
}

/// Thread ids of a process (`/proc/PID/task`).
pub fn tasks(root: &Path, pid: i32) -> Result<Vec<i32>> {
    let dir = proc_dir(root, pid).join("task");
    let rd = std::fs::read_dir(&dir).map_err(|source| Error::Read { path: dir.clone(), source })?;
    let mut tids: Vec<i32> = rd.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect();
    tids.sort_unstable();
    Ok(tids)
}

/// The children of a process: the union of its threads' `/proc/PID/task/TID/children`
/// (Linux 3.5+, `CONFIG_PROC_CHILDREN`); a thread that is gone meanwhile counts for none.
pub fn children(root: &Path, pid: i32) -> Result<Vec<i32>> {
    let mut kids = vec![];
    for tid in tasks(root, pid)? {
        let path = proc_dir(root, pid).join("task").join(tid.to_string()).join("children");
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => return Err(Error::Read { path, source }),
        };
        for w in text.split_whitespace() {
            kids.push(w.parse().map_err(|_| Error::Parse {
                path: path.clone(),
                line: 1,
                message: format!("{w:?} is not a pid"),
            })?);
        }
    }
    kids.sort_unstable();
    kids.dedup();
    Ok(kids)
}

/// Parses `/proc/PID/stat` and the uid from `/proc/PID/status`.
pub fn stat(root: &Path, pid: i32) -> Result<ProcStat> {
    let path = proc_dir(root, pid).join("stat");
    let text = read_to_string(&path)?;
    let bad = |message: &str| Error::Parse { path: path.clone(), line: 1, message: message.to_owned() };
    // comm may contain spaces and parentheses: it runs from the first '(' to the last ')'.
    let open = text.find('(').ok_or_else(|| bad("no '(' before comm"))?;
    let close = text.rfind(')').ok_or_else(|| bad("no ')' after comm"))?;
    let comm = text[open + 1..close].to_owned();
    let rest: Vec<&str> = text[close + 1..].split_whitespace().collect();
    // rest[0] is field 3 (state); ppid is field 4, flags field 9, starttime field 22.
    let field = |n: usize| rest.get(n - 3).copied().ok_or_else(|| bad(&format!("fewer than {n} fields")));
    let ppid = field(4)?.parse().map_err(|_| bad("ppid is not a number"))?;
    let flags: u64 = field(9)?.parse().map_err(|_| bad("flags is not a number"))?;
    let start_time = field(22)?.parse().map_err(|_| bad("starttime is not a number"))?;
    const PF_KTHREAD: u64 = 0x0020_0000;
    let uid = status_uid(root, pid)?;
    let state = field(3)?.chars().next().ok_or_else(|| bad("no state"))?;
    Ok(ProcStat { pid, ppid, uid, comm, start_time, kernel_thread: flags & PF_KTHREAD != 0, state })
}

/// The system calls in which a thread sleeps interruptibly (state `S`, not `D`) while it waits
/// for I/O it submitted asynchronously: Linux AIO's `io_getevents` (libaio's wait; the rarer
/// `io_pgetevents` is not counted) and `io_uring_enter` (which may also wait for a network
/// completion).
const ASYNC_IO_WAITS: [libc::c_long; 2] = [libc::SYS_io_getevents, libc::SYS_io_uring_enter];

/// Whether a thread of the process waits for I/O now: one in uninterruptible sleep (state `D`
/// in `/proc/PID/task/TID/stat`: on Linux mostly a block I/O wait — a synchronous or
/// `O_DIRECT` read, a page fault reading the disk, a dirty-page throttle), or asleep in one of
/// the asynchronous-I/O waits (the number in `/proc/PID/task/TID/syscall`, which needs the
/// right to ptrace the process: root). Threads that exit meanwhile count for none. The states
/// are read first and the system calls only of sleeping threads and only while no `D` is
/// found, so a large app costs one small read per thread in the common case.
pub fn waits_for_io(root: &Path, pid: i32) -> Result<bool> {
    let mut sleeping = vec![];
    for tid in tasks(root, pid)? {
        let dir = proc_dir(root, pid).join("task").join(tid.to_string());
        let Some(stat) = read_if_there(&dir.join("stat"))? else { continue };
        // The state follows the last ')' (comm may hold any byte but a NUL).
        let state = stat.rfind(')').and_then(|c| stat[c + 1..].split_whitespace().next()).and_then(|w| w.chars().next());
        match state {
            Some('D') => return Ok(true),
            Some('S') => sleeping.push(dir),
            Some(_) => {}
            None => return Err(Error::Parse { path: dir.join("stat"), line: 1, message: "no state after comm".into() }),
        }
    }
    for dir in sleeping {
        let path = dir.join("syscall");
        let Some(text) = read_if_there(&path)? else { continue };
        // "NR args… sp pc" in a system call, "-1 sp pc" blocked outside one, "running".
        let first = text.split_whitespace().next().unwrap_or("");
        if first == "running" {
            continue;
        }
        let nr: libc::c_long = first.parse().map_err(|_| Error::Parse {
            path: path.clone(),
            line: 1,
            message: format!("{first:?} is not a system call number"),
        })?;
        if ASYNC_IO_WAITS.contains(&nr) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// A file's text, or `None` when it is gone (its thread exited: `ENOENT`, or `ESRCH` while
/// reading).
fn read_if_there(path: &Path) -> Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ESRCH) => Ok(None),
        Err(source) => Err(Error::Read { path: path.to_owned(), source }),
    }
}

fn status_uid(root: &Path, pid: i32) -> Result<u32> {
    let path = proc_dir(root, pid).join("status");
    let text = read_to_string(&path)?;
    for (i, line) in text.lines().enumerate() {
        if let Some(v) = line.strip_prefix("Uid:") {
            return v.split_whitespace().next().and_then(|u| u.parse().ok()).ok_or_else(|| Error::Parse {
                path: path.clone(),
                line: i + 1,
                message: "Uid: has no number".into(),
            });
        }
    }
    Err(Error::Parse { path, line: 0, message: "no Uid: line".into() })
}

/// Every process that can be read now; processes that exit during the scan are skipped.
pub fn snapshot(root: &Path) -> Result<Vec<ProcStat>> {
    let mut out = Vec::new();
    for pid in list_pids(root)? {
        match stat(root, pid) {
            Ok(s) => out.push(s),
            Err(e) if e.is_not_found() => {}
            Err(Error::Read { .. }) => {} // raced with exit (ESRCH is reported as other errors too)
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// One line of `/proc/PID/cgroup`: `id:controllers:path`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupLine {
    pub id: u32,
    /// Empty for the v2 line (`0::/path`).
    pub controllers: Vec<String>,
    pub path: String,
}

pub fn cgroups(root: &Path, pid: i32) -> Result<Vec<CgroupLine>> {
    let path = proc_dir(root, pid).join("cgroup");
    let text = read_to_string(&path)?;
    parse_cgroups(&path, &text)
}

pub fn parse_cgroups(path: &Path, text: &str) -> Result<Vec<CgroupLine>> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.is_empty())
        .map(|(i, l)| {
            let bad = |m: &str| Error::Parse { path: path.to_owned(), line: i + 1, message: m.to_owned() };
            let mut it = l.splitn(3, ':');
            let id = it.next().and_then(|s| s.parse().ok()).ok_or_else(|| bad("bad hierarchy id"))?;
            let ctrls = it.next().ok_or_else(|| bad("no controller field"))?;
            let p = it.next().ok_or_else(|| bad("no path field"))?;
            let controllers = ctrls.split(',').filter(|c| !c.is_empty()).map(str::to_owned).collect();
            Ok(CgroupLine { id, controllers, path: p.to_owned() })
        })
        .collect()
}

/// The cgroup path (relative to its hierarchy's mount) of `pid` for a v1 controller name
/// (`"cpu"`, `"blkio"`, ...) or, with `None`, the v2 one.
pub fn cgroup_of(lines: &[CgroupLine], v1_controller: Option<&str>) -> Option<String> {
    lines
        .iter()
        .find(|l| match v1_controller {
            Some(c) => l.controllers.iter().any(|x| x == c),
            None => l.id == 0 && l.controllers.is_empty(),
        })
        .map(|l| l.path.clone())
}

/// Bytes a process passed to read/write syscalls (`rchar`, `wchar`) and that reached the
/// block layer (`read_bytes`, `write_bytes`), from `/proc/PID/io`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoCounters {
    pub rchar: u64,
    pub wchar: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
}

/// Sets `/proc/PID/oom_score_adj` (`-1000`: never chosen by the OOM killer; needs root to lower).
pub fn set_oom_score_adj(root: &Path, pid: i32, value: i32) -> Result<()> {
    crate::error::write_str(&proc_dir(root, pid).join("oom_score_adj"), &value.to_string())
}

pub fn io(root: &Path, pid: i32) -> Result<IoCounters> {
    let path = proc_dir(root, pid).join("io");
    let text = read_to_string(&path)?;
    let mut c = IoCounters::default();
    for (i, line) in text.lines().enumerate() {
        let Some((k, v)) = line.split_once(':') else { continue };
        let v: u64 = v.trim().parse().map_err(|_| Error::Parse {
            path: path.clone(),
            line: i + 1,
            message: format!("{k} is not a number"),
        })?;
        match k {
            "rchar" => c.rchar = v,
            "wchar" => c.wchar = v,
            "read_bytes" => c.read_bytes = v,
            "write_bytes" => c.write_bytes = v,
            _ => {}
        }
    }
    Ok(c)
}

/// This machine's host name and kernel release (`/proc/sys/kernel/hostname`, `osrelease`).
pub fn uname(root: &Path) -> Result<(String, String)> {
    let r = |f: &str| read_to_string(&root.join("proc/sys/kernel").join(f)).map(|s| s.trim().to_owned());
    Ok((r("hostname")?, r("osrelease")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_proc(pid: i32, stat: &str, status: &str) -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("proc").join(pid.to_string());
        std::fs::create_dir_all(d.join("task/7")).unwrap();
        std::fs::write(d.join("stat"), stat).unwrap();
        std::fs::write(d.join("status"), status).unwrap();
        t
    }

    #[test]
    fn stat_with_spaces_and_parens_in_comm() {
        let t = fake_proc(
            7,
            "7 (my (odd) app) S 1 7 7 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 12345 1000 10\n",
            "Name:\tx\nUid:\t1000\t1000\t1000\t1000\n",
        );
        let s = stat(t.path(), 7).unwrap();
        assert_eq!(s.comm, "my (odd) app");
        assert_eq!((s.ppid, s.uid, s.start_time, s.kernel_thread, s.state), (1, 1000, 12345, false, 'S'));
        assert_eq!(list_pids(t.path()).unwrap(), vec![7]);
        assert_eq!(tasks(t.path(), 7).unwrap(), vec![7]);
    }

    #[test]
    fn waits_for_io_sees_d_state_and_asynchronous_io_waits() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("proc/40/task");
        let nano = libc::SYS_clock_nanosleep;
        let (aio, uring) = (libc::SYS_io_getevents, libc::SYS_io_uring_enter);
        let thread = |tid: i32, state: char, syscall: Option<String>| {
            let td = d.join(tid.to_string());
            std::fs::create_dir_all(&td).unwrap();
            std::fs::write(td.join("stat"), format!("{tid} (soffice (bin)) {state} 1 1 1 0 -1 0\n")).unwrap();
            let _ = std::fs::remove_file(td.join("syscall"));
            if let Some(s) = syscall {
                std::fs::write(td.join("syscall"), s).unwrap();
            }
        };
        let call = |nr: libc::c_long| Some(format!("{nr} 0x7 0x1 0x1 0x7ff 0x0 0x0 0x7ff0 0x7ef0\n"));
        // Not waiting: asleep in clock_nanosleep, running, blocked outside a system call, and a
        // thread that exited between the listing and the read (no files).
        thread(40, 'S', call(nano));
        thread(41, 'R', Some("running\n".to_owned()));
        thread(42, 'S', Some("-1 0x7ff0 0x7ef0\n".to_owned()));
        std::fs::create_dir_all(d.join("43")).unwrap();
        assert!(!waits_for_io(t.path(), 40).unwrap());
        // Waiting: a thread in D; a thread in libaio's io_getevents; one in io_uring_enter.
        for (state, syscall) in [('D', call(nano)), ('S', call(aio)), ('S', call(uring))] {
            thread(44, state, syscall.clone());
            assert!(waits_for_io(t.path(), 40).unwrap(), "{state} {syscall:?}");
        }
        // Bad text is an error naming the file, not a silent "not waiting".
        thread(44, 'S', Some("nanosleep\n".to_owned()));
        let e = waits_for_io(t.path(), 40).unwrap_err().to_string();
        assert!(e.contains("task/44/syscall:1") && e.contains("\"nanosleep\""), "{e}");
        // A process that is gone is an error the caller sees as such.
        assert!(waits_for_io(t.path(), 41).unwrap_err().is_not_found());
    }

    #[test]
    fn kernel_thread_flag() {
        let t = fake_proc(2, "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0\n", "Uid:\t0\t0\t0\t0\n");
        assert!(stat(t.path(), 2).unwrap().kernel_thread);
    }

    #[test]
    fn truncated_stat_is_an_error_with_path() {
        let t = fake_proc(3, "3 (x) S 1\n", "Uid:\t0\n");
        let e = stat(t.path(), 3).unwrap_err().to_string();
        assert!(e.contains("proc/3/stat:1: fewer than"), "{e}");
    }

    #[test]
    fn vanished_pid_is_not_found() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("proc")).unwrap();
        assert!(stat(t.path(), 99).unwrap_err().is_not_found());
        assert!(snapshot(t.path()).unwrap().is_empty());
    }

    #[test]
    fn cgroup_lines_v1_and_v2() {
        let text = "9:name=systemd:/\n7:blkio:/a/b\n4:memory:/m\n1:cpu,cpuacct:/c\n0::/user.slice\n";
        let lines = parse_cgroups(Path::new("x"), text).unwrap();
        assert_eq!(cgroup_of(&lines, Some("cpu")).as_deref(), Some("/c"));
        assert_eq!(cgroup_of(&lines, Some("blkio")).as_deref(), Some("/a/b"));
        assert_eq!(cgroup_of(&lines, None).as_deref(), Some("/user.slice"));
        assert_eq!(cgroup_of(&lines, Some("freezer")), None);
        assert!(parse_cgroups(Path::new("x"), "zz:cpu:/\n").unwrap_err().to_string().starts_with("x:1:"));
    }

    #[test]
    fn io_counters() {
        let t = fake_proc(5, "", "");
        std::fs::write(
            t.path().join("proc/5/io"),
            "rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 2\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n",
        )
        .unwrap();
        let c = io(t.path(), 5).unwrap();
        assert_eq!(c, IoCounters { rchar: 10, wchar: 20, read_bytes: 4096, write_bytes: 8192 });
    }

    #[test]
    fn real_proc_self_parses() {
        let me = std::process::id() as i32;
        let s = stat(Path::new("/"), me).unwrap();
        assert_eq!(s.pid, me);
        assert!(!s.kernel_thread);
        assert!(!cgroups(Path::new("/"), me).unwrap().is_empty());
    }
}
