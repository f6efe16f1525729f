//! `strace -f -tt -T` output (also `-ttt`, `-y`, with `[pid N]` or bare pid prefixes, or no
//! prefix without `-f`).
//!
//! `<unfinished ...>` / `<... NAME resumed>` pairs are joined into one record timed at the
//! call's start. Signal lines (`--- SIG... ---`), exit lines (`+++ exited ... +++`) and strace's
//! own messages (`strace: Process N attached`) are skipped explicitly. File descriptors are
//! tracked per fd table (threads created with `CLONE_FILES` share their parent's table, forked
//! children get a copy), so reads and writes carry their file's path and, when the call has no
//! explicit offset, the descriptor's current offset.

use std::collections::{HashMap, VecDeque};

use forefront_record::trace::{SyscallRecord, TraceRecord};

use crate::error::LineError;
use crate::text::{check_rw, parse_i64, parse_secs_ns, parse_u64, shown, MAX_RW_COUNT};
use crate::LineParser;

const DAY_NS: u64 = 86_400 * 1_000_000_000;

/// The most file descriptors tracked in all fd tables together. Each fork copies its parent's
/// table (as the kernel does), so forks of a process with many open files multiply them: 3,000
/// opens then 3,000 forks held 790 MB before the limit. Tables of exited processes are freed,
/// so a real trace stays far below it (live processes × their open files).
pub const MAX_TRACKED_FDS: usize = 1 << 20;

#[derive(Clone, Default)]
struct OpenFile {
    path: Option<String>,
    offset: u64,
}

#[derive(Default)]
pub struct StraceParser {
    /// Per tid: start time, syscall name and the argument text seen so far.
    pending: HashMap<u32, (u64, String, String)>,
    /// tid → fd table id.
    table_of: HashMap<u32, u32>,
    tables: HashMap<u32, HashMap<i32, OpenFile>>,
    /// fd table id → tids sharing it; a table goes when its last tid exits.
    table_refs: HashMap<u32, u32>,
    next_table: u32,
    /// Descriptors tracked in all tables together (bounded by [`MAX_TRACKED_FDS`]).
    tracked_fds: usize,
    /// tid → process name: the basename of what its (or its parent's) `execve` ran, or the
    /// name it gave itself with `prctl(PR_SET_NAME)` since.
    names: HashMap<u32, String>,
    last_time: u64,
    day_offset: u64,
    /// Lines skipped on purpose (signals, exits, strace messages).
    pub skipped_lines: u64,
}

/// True if `line` looks like strace output (used by format detection).
pub(crate) fn looks_like(line: &str) -> bool {
    let Ok((_, _, _, rest)) = split_prefix(line) else {
        return false;
    };
    let rest = rest.trim_start();
    if rest.starts_with("<... ") || rest.starts_with("+++ ") || rest.starts_with("--- ") {
        return true;
    }
    match rest.find('(') {
        Some(i) => i > 0 && rest[..i].bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_'),
        None => false,
    }
}

/// Splits `[pid N] ` / `N ` and the timestamp off the line: (tid, time_ns, time column, rest
/// start offset).
fn split_prefix(line: &str) -> Result<(u32, u64, usize, &str), LineError> {
    let mut pos = 0;
    let b = line.as_bytes();
    let mut tid = 0u32;
    let skip = |p: &mut usize| {
        while *p < b.len() && b[*p] == b' ' {
            *p += 1;
        }
    };
    skip(&mut pos);
    if line[pos..].starts_with("[pid") {
        let end = line[pos..].find(']').ok_or_else(|| LineError::new(pos + 1, "unterminated [pid N]"))? + pos;
        let n = line[pos + 4..end].trim();
        tid =
            parse_u64(n).and_then(|v| u32::try_from(v).ok()).ok_or_else(|| LineError::new(pos + 1, format!("bad pid `{n}`")))?;
        pos = end + 1;
        skip(&mut pos);
    } else {
        let start = pos;
        while pos < b.len() && b[pos].is_ascii_digit() {
            pos += 1;
        }
        if pos > start && pos < b.len() && b[pos] == b' ' {
            tid = parse_u64(&line[start..pos])
                .and_then(|v| u32::try_from(v).ok())
                .ok_or_else(|| LineError::new(start + 1, "bad pid"))?;
            skip(&mut pos);
        } else {
            pos = start;
        }
    }
    let tcol = pos + 1;
    let tend = line[pos..].find(' ').map(|i| i + pos).unwrap_or(line.len());
    let tok = &line[pos..tend];
    let time = parse_clock(tok).ok_or_else(|| {
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
        let message = match tok.split_once('.') {
            Some((a, b)) if digits(a) && digits(b) => {
                format!(
                    "timestamp `{}` s is out of range (at most {} s: times are 64-bit nanoseconds)",
                    shown(tok),
                    u64::MAX / 1_000_000_000
                )
            }
            Some((hms, b)) if digits(b) && hms.len() == 8 && hms.split(':').all(digits) => {
                format!("timestamp `{}` is not a time of day (hours 00-23, minutes 00-59, seconds below 61)", shown(tok))
            }
            _ => format!("expected a timestamp (strace -tt HH:MM:SS.us or -ttt seconds), found `{}`", shown(tok)),
        };
        LineError::new(tcol, message)
    })?;
    Ok((tid, time, tcol, &line[tend..]))
}

/// `HH:MM:SS.ffffff` → ns since midnight; `1700000000.123456` → ns since the epoch.
fn parse_clock(tok: &str) -> Option<u64> {
    if tok.len() >= 8 && tok.as_bytes()[2] == b':' && tok.as_bytes()[5] == b':' {
        let h = parse_u64(&tok[0..2])?;
        let m = parse_u64(&tok[3..5])?;
        let s = parse_secs_ns(&tok[6..])?;
        // (60: a leap second.)
        if h > 23 || m > 59 || s >= 61_000_000_000 {
            return None;
        }
        Some((h * 3600 + m * 60) * 1_000_000_000 + s)
    } else if tok.contains('.') {
        parse_secs_ns(tok)
    } else {
        None
    }
}

/// The byte offset of a string literal in `s` that is never closed, if any (strace prints every
/// string with its closing quote, also when `-s` cuts it: `"abc"...`).
fn unterminated_string(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut open = None;
    let mut i = 0;
    while i < b.len() {
        match (open, b[i]) {
            (Some(_), b'\\') => i += 1,
            (Some(_), b'"') => open = None,
            (None, b'"') => open = Some(i),
            _ => {}
        }
        i += 1;
    }
    open
}

/// Splits a call's argument text at top-level commas (quotes, brackets, braces and parentheses
/// nest).
fn split_args(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut depth = 0i32;
    let mut in_str = false;
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if in_str {
            if c == b'\\' {
                i += 1;
            } else if c == b'"' {
                in_str = false;
            }
        } else {
            match c {
                b'"' => in_str = true,
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth -= 1,
                b',' if depth == 0 => {
                    out.push(s[start..i].trim());
                    start = i + 1;
                }
                _ => {}
            }
        }
        i += 1;
    }
    let last = s[start..].trim();
    if !last.is_empty() || !out.is_empty() {
        out.push(last);
    }
    out
}

/// A quoted strace string (`"..."`, maybe followed by `...`), unescaped.
fn unquote(arg: &str) -> Option<String> {
    let inner = arg.strip_prefix('"')?;
    let mut out = Vec::new();
    let b = inner.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => return Some(String::from_utf8_lossy(&out).into_owned()),
            b'\\' if i + 1 < b.len() => {
                i += 1;
                match b[i] {
                    b'n' => out.push(b'\n'),
                    b't' => out.push(b'\t'),
                    b'r' => out.push(b'\r'),
                    b'v' => out.push(0x0b),
                    b'f' => out.push(0x0c),
                    b'x' if i + 2 < b.len() => {
                        let h = std::str::from_utf8(&b[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok())?;
                        out.push(h);
                        i += 2;
                    }
                    d @ b'0'..=b'7' => {
                        let mut v = (d - b'0') as u32;
                        let mut n = 1;
                        while n < 3 && i + 1 < b.len() && (b'0'..=b'7').contains(&b[i + 1]) {
                            i += 1;
                            v = v * 8 + (b[i] - b'0') as u32;
                            n += 1;
                        }
                        out.push(v as u8);
                    }
                    other => out.push(other),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    None
}

/// An fd argument: `3` or, with `strace -y`, `3</path/to/file>`.
fn fd_arg(arg: &str) -> Option<(i32, Option<String>)> {
    let (num, path) = match arg.find('<') {
        Some(i) => (&arg[..i], arg[i + 1..].strip_suffix('>').map(str::to_string)),
        None => (arg, None),
    };
    let fd = if num == "AT_FDCWD" { -100 } else { i32::try_from(parse_i64(num)?).ok()? };
    Some((fd, path))
}

impl StraceParser {
    /// The fd table of `tid` (a new, empty one for a tid first seen).
    fn table_id(&mut self, tid: u32) -> u32 {
        if let Some(&id) = self.table_of.get(&tid) {
            return id;
        }
        let id = self.new_table(HashMap::new());
        self.table_of.insert(tid, id);
        id
    }

    fn new_table(&mut self, table: HashMap<i32, OpenFile>) -> u32 {
        let id = self.next_table;
        self.next_table = self.next_table.wrapping_add(1);
        self.tracked_fds += table.len();
        self.tables.insert(id, table);
        self.table_refs.insert(id, 1);
        id
    }

    fn table(&mut self, tid: u32) -> &mut HashMap<i32, OpenFile> {
        let id = self.table_id(tid);
        self.tables.entry(id).or_default()
    }

    /// `fd` in `tid`'s table, added (empty) if missing, within [`MAX_TRACKED_FDS`].
    fn fd_entry(&mut self, tid: u32, fd: i32, col: usize) -> Result<&mut OpenFile, LineError> {
        let id = self.table_id(tid);
        if !self.tables.get(&id).is_some_and(|t| t.contains_key(&fd)) {
            self.count_fds(1, col)?;
        }
        Ok(self.tables.entry(id).or_default().entry(fd).or_default())
    }

    fn count_fds(&mut self, n: usize, col: usize) -> Result<(), LineError> {
        if self.tracked_fds + n > MAX_TRACKED_FDS {
            return Err(LineError::new(
                col,
                format!(
                    "more than {MAX_TRACKED_FDS} file descriptors open in all processes together ({} processes' fd tables; each fork copies its parent's)",
                    self.tables.len()
                ),
            ));
        }
        self.tracked_fds += n;
        Ok(())
    }

    /// `tid` is gone (exited, or its pid reused by a new child): its table goes with its last
    /// user.
    fn release(&mut self, tid: u32) {
        let Some(id) = self.table_of.remove(&tid) else {
            return;
        };
        let refs = self.table_refs.entry(id).or_insert(1);
        *refs -= 1;
        if *refs == 0 {
            self.table_refs.remove(&id);
            if let Some(t) = self.tables.remove(&id) {
                self.tracked_fds -= t.len();
            }
        }
    }

    /// Builds the record of one complete call `name(args) = result <dur>`.
    fn complete(&mut self, tid: u32, time_ns: u64, name: &str, call: &str, col: usize) -> Result<SyscallRecord, LineError> {
        // `call` is everything after `name(`.
        let (body, duration_ns) = match call.trim_end().strip_suffix('>') {
            Some(s) => match s.rfind(" <") {
                Some(i) => {
                    let d = &s[i + 2..];
                    let ns = if d == "unavailable" {
                        None
                    } else {
                        Some(parse_secs_ns(d).ok_or_else(|| LineError::new(col + i + 2, format!("bad duration `<{d}>`")))?)
                    };
                    (&s[..i], ns)
                }
                None => (call, None),
            },
            None => (call, None),
        };
        // `args) = result`; strace pads short calls: `brk(NULL)         = 0x...`.
        let mut search_end = body.len();
        let (args_end, res_start) = loop {
            let Some(e) = body[..search_end].rfind(" = ") else {
                return Err(LineError::new(col + body.len(), "missing `) = result`"));
            };
            let before = body[..e].trim_end_matches(' ');
            if before.ends_with(')') {
                break (before.len() - 1, e + 3);
            }
            search_end = e;
        };
        let args_text = &body[..args_end];
        if let Some(at) = unterminated_string(args_text) {
            return Err(LineError::new(col + at, "unterminated string literal (no closing `\"`): a cut or corrupt line"));
        }
        let result_text = body[res_start..].split(' ').next().unwrap_or("");
        let result = if result_text == "?" {
            None
        } else if let Some(h) = result_text.strip_prefix("0x") {
            Some(
                u64::from_str_radix(h, 16)
                    .map_err(|_| LineError::new(col + res_start, format!("bad result `{}`", shown(result_text))))?
                    as i64,
            )
        } else {
            Some(
                parse_i64(result_text)
                    .ok_or_else(|| LineError::new(col + res_start, format!("bad result `{}`", shown(result_text))))?,
            )
        };
        let args = split_args(args_text);
        let mut r = SyscallRecord { time_ns, tid, name: name.to_string(), duration_ns, result, ..Default::default() };
        let arg = |i: usize| args.get(i).copied();
        let ok = result.filter(|v| *v >= 0);
        match name {
            "open" | "creat" | "openat" | "openat2" => {
                let p = if name.starts_with("openat") { arg(1) } else { arg(0) };
                r.path = p.and_then(unquote);
                if let Some(fd) = ok.and_then(|v| i32::try_from(v).ok()) {
                    r.fd = Some(fd);
                    let path = r.path.clone();
                    *self.fd_entry(tid, fd, col)? = OpenFile { path, offset: 0 };
                }
            }
            "read" | "write" | "readv" | "writev" | "pread64" | "pwrite64" | "preadv" | "pwritev" | "preadv2" | "pwritev2"
            | "pread" | "pwrite" => {
                let (fd, ypath) =
                    arg(0).and_then(fd_arg).ok_or_else(|| LineError::new(col, format!("{name}: bad fd argument")))?;
                r.fd = Some(fd);
                let vectored = name.contains('v');
                // The requested count, up to what one call can move at all (MAX_RW_COUNT): with no
                // result (`= ?`) it stands for the bytes moved. A result past it is an error below.
                r.size = if vectored { ok.map(|v| v as u64) } else { arg(2).and_then(parse_u64).map(|n| n.min(MAX_RW_COUNT)) };
                let explicit = if name.starts_with('p') { arg(3).and_then(parse_u64) } else { None };
                let done = ok.map(|v| v as u64).or(r.size).unwrap_or(0);
                let entry = self.fd_entry(tid, fd, col)?;
                let at = explicit.unwrap_or(entry.offset);
                check_rw(at, done).map_err(|m| LineError::new(col, format!("{name}: {m}")))?;
                if ypath.is_some() {
                    entry.path = ypath;
                }
                r.path = entry.path.clone();
                match explicit {
                    Some(off) => r.offset = Some(off),
                    None => {
                        r.offset = Some(entry.offset);
                        entry.offset = entry.offset.saturating_add(done);
                    }
                }
            }
            "lseek" | "_llseek" | "llseek" => {
                if let Some((fd, ypath)) = arg(0).and_then(fd_arg) {
                    r.fd = Some(fd);
                    let entry = self.fd_entry(tid, fd, col)?;
                    if ypath.is_some() {
                        entry.path = ypath;
                    }
                    if let Some(v) = ok {
                        entry.offset = v as u64;
                    }
                    r.path = entry.path.clone();
                    r.offset = Some(entry.offset);
                }
            }
            "dup" | "dup2" | "dup3" | "fcntl" | "fcntl64" => {
                if let Some((fd, _)) = arg(0).and_then(fd_arg) {
                    r.fd = Some(fd);
                    let is_dup = !name.starts_with("fcntl") || arg(1).is_some_and(|c| c.starts_with("F_DUPFD"));
                    let src = self.table(tid).get(&fd).cloned();
                    r.path = src.as_ref().and_then(|s| s.path.clone());
                    if let (true, Some(new)) = (is_dup, ok.and_then(|v| i32::try_from(v).ok())) {
                        if new != fd {
                            *self.fd_entry(tid, new, col)? = src.unwrap_or_default();
                        }
                    }
                }
            }
            "close" => {
                if let Some((fd, _)) = arg(0).and_then(fd_arg) {
                    r.fd = Some(fd);
                    let closed = self.table(tid).remove(&fd);
                    self.tracked_fds -= usize::from(closed.is_some());
                    r.path = closed.and_then(|f| f.path);
                }
            }
            "execve" | "execveat" => {
                let p = if name == "execveat" { arg(1) } else { arg(0) };
                if let (Some(_), Some(path)) = (ok, p.and_then(unquote)) {
                    let base = path.rsplit('/').next().unwrap_or(&path).to_string();
                    self.names.insert(tid, base);
                }
            }
            // A thread that names itself (`prctl(PR_SET_NAME, "ff-op-launch")`) is known by that
            // name from then on, cut as the kernel cuts a comm (15 bytes), as `ps` shows it.
            "prctl" if arg(0) == Some("PR_SET_NAME") => {
                if let (Some(_), Some(n)) = (ok, arg(1).and_then(unquote)) {
                    let mut end = n.len().min(15);
                    while !n.is_char_boundary(end) {
                        end -= 1;
                    }
                    self.names.insert(tid, n[..end].to_string());
                }
            }
            "clone" | "clone3" | "fork" | "vfork" => {
                if let Some(child) = ok.and_then(|v| u32::try_from(v).ok()).filter(|c| *c > 0) {
                    if let Some(n) = self.names.get(&tid).cloned() {
                        self.names.insert(child, n);
                    }
                    let table_id = self.table_id(tid);
                    // A pid seen before is a new process now (its old one exited unseen).
                    if child != tid {
                        self.release(child);
                    }
                    if child == tid {
                        // A corrupt line (a process cannot be its own child): nothing to share.
                    } else if args_text.contains("CLONE_FILES") {
                        self.table_of.insert(child, table_id);
                        *self.table_refs.entry(table_id).or_insert(0) += 1;
                    } else {
                        let n = self.tables.get(&table_id).map_or(0, HashMap::len);
                        self.count_fds(n, col)?;
                        self.tracked_fds -= n;
                        let copy = self.tables.get(&table_id).cloned().unwrap_or_default();
                        let id = self.new_table(copy);
                        self.table_of.insert(child, id);
                    }
                }
            }
            _ => {
                // Calls on a descriptor: fsync, fdatasync, fstat, ftruncate, sync_file_range...
                let first = arg(0).unwrap_or("");
                let fd_based =
                    name.starts_with('f') && !name.starts_with("fork") || name == "sync_file_range" || name == "syncfs";
                if name.ends_with("at") || name == "statx" {
                    if let Some(p) = arg(1).and_then(unquote) {
                        r.path = Some(p);
                    }
                } else if first.starts_with('"') {
                    r.path = unquote(first);
                } else if fd_based {
                    if let Some((fd, ypath)) = fd_arg(first) {
                        r.fd = Some(fd);
                        r.path = ypath.or_else(|| self.table(tid).get(&fd).and_then(|f| f.path.clone()));
                    }
                }
            }
        }
        r.comm = self.names.get(&tid).cloned();
        Ok(r)
    }
}

impl LineParser for StraceParser {
    fn parse_line(&mut self, line: &str, out: &mut VecDeque<TraceRecord>) -> Result<(), LineError> {
        let t = line.trim();
        if t.is_empty() {
            return Ok(());
        }
        if t.starts_with("strace: ") {
            self.skipped_lines += 1;
            return Ok(());
        }
        let (tid, mut time, _tcol, rest) = split_prefix(line)?;
        // -tt restarts at midnight: keep time monotonic across a day boundary.
        // (Saturating: a -ttt time near 2^64 ns must not wrap.)
        time = time.saturating_add(self.day_offset);
        if time.saturating_add(DAY_NS / 2) < self.last_time && time < DAY_NS.saturating_add(self.day_offset) {
            self.day_offset = self.day_offset.saturating_add(DAY_NS);
            time = time.saturating_add(DAY_NS);
        }
        self.last_time = self.last_time.max(time);
        let col = line.len() - rest.len() + 1;
        let rest_t = rest.trim_start();
        let col = col + (rest.len() - rest_t.len());
        let rest = rest_t;
        if rest.starts_with("+++ exited ") || rest.starts_with("+++ killed by ") {
            // The process is gone: its fd table goes with the last thread that shares it.
            self.release(tid);
        }
        if rest.starts_with("+++ ") || rest.starts_with("--- ") {
            self.skipped_lines += 1;
            return Ok(());
        }
        if let Some(r) = rest.strip_prefix("<... ") {
            let end = r.find(" resumed>").ok_or_else(|| LineError::new(col, "expected `<... NAME resumed>`"))?;
            let name = &r[..end];
            let tail = &r[end + " resumed>".len()..];
            let (start, pname, args) = self.pending.remove(&tid).ok_or_else(|| {
                LineError::new(col, format!("`<... {name} resumed>` for pid {tid} without an earlier `<unfinished ...>`"))
            })?;
            if pname != name && !name.is_empty() {
                return Err(LineError::new(col + 5, format!("resumed `{name}` but pid {tid} left `{pname}` unfinished")));
            }
            let call = format!("{args}{tail}");
            let rec = self.complete(tid, start, &pname, &call, col)?;
            out.push_back(TraceRecord::Syscall(rec));
            return Ok(());
        }
        let open = rest.find('(').ok_or_else(|| LineError::new(col, "expected `name(args) = result`"))?;
        let name = &rest[..open];
        if name.is_empty() || !name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') {
            return Err(LineError::new(col, format!("bad syscall name `{name}`")));
        }
        let call = &rest[open + 1..];
        if let Some(args) = call.strip_suffix("<unfinished ...>") {
            if let Some((_, prev, _)) = self.pending.insert(tid, (time, name.to_string(), args.to_string())) {
                return Err(LineError::new(col, format!("pid {tid} starts `{name}` while `{prev}` is unfinished")));
            }
            return Ok(());
        }
        let rec = self.complete(tid, time, name, call, col + open + 1)?;
        out.push_back(TraceRecord::Syscall(rec));
        Ok(())
    }

    fn finish(&mut self, out: &mut VecDeque<TraceRecord>) {
        // Calls that never resumed (the process was killed or the trace cut): keep them, with
        // no result or duration, in a deterministic order.
        let mut left: Vec<_> = self.pending.drain().collect();
        left.sort_by_key(|(tid, (t, _, _))| (*t, *tid));
        for (tid, (time_ns, name, _)) in left {
            out.push_back(TraceRecord::Syscall(SyscallRecord { time_ns, tid, name, ..Default::default() }));
        }
    }
}

/// Writes a syscall as one `strace -f -tt -T` line (used by round-trip tests).
pub fn write_record<W: std::io::Write>(w: &mut W, r: &SyscallRecord) -> std::io::Result<()> {
    let t = r.time_ns % DAY_NS;
    let (h, m, s, us) = (t / 3_600_000_000_000, t / 60_000_000_000 % 60, t / 1_000_000_000 % 60, t % 1_000_000_000 / 1000);
    write!(w, "{} {:02}:{:02}:{:02}.{:06} {}(", r.tid, h, m, s, us, r.name)?;
    let fd = r.fd.unwrap_or(-1);
    let path = r.path.as_deref().unwrap_or("");
    match r.name.as_str() {
        "openat" => write!(w, "AT_FDCWD, \"{path}\", O_RDONLY")?,
        "read" | "write" => write!(w, "{fd}, \"\"..., {}", r.size.unwrap_or(0))?,
        "pread64" | "pwrite64" => write!(w, "{fd}, \"\"..., {}, {}", r.size.unwrap_or(0), r.offset.unwrap_or(0))?,
        _ => write!(w, "{fd}")?,
    }
    match r.result {
        Some(v) => write!(w, ") = {v}")?,
        None => write!(w, ") = ?")?,
    }
    if let Some(d) = r.duration_ns {
        write!(w, " <{}.{:06}>", d / 1_000_000_000, d % 1_000_000_000 / 1000)?;
    }
    writeln!(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<SyscallRecord>, LineError> {
        let mut p = StraceParser::default();
        let mut out = VecDeque::new();
        for l in text.lines() {
            p.parse_line(l, &mut out)?;
        }
        p.finish(&mut out);
        Ok(out
            .into_iter()
            .map(|r| match r {
                TraceRecord::Syscall(s) => s,
                _ => unreachable!(),
            })
            .collect())
    }

    #[test]
    fn joins_unfinished_and_tracks_files() {
        let v = parse(
            "10315 00:05:28.392727 openat(AT_FDCWD, \"/tmp/xx\", O_WRONLY|O_CREAT|O_TRUNC, 0666 <unfinished ...>\n\
             10316 00:05:28.392800 close(3) = 0 <0.000010>\n\
             10315 00:05:28.392888 <... openat resumed>) = 3 <0.000151>\n\
             10315 00:05:28.393000 write(3, \"a, b) = 5\"..., 100) = 100 <0.000020>\n\
             [pid 10315] 00:05:28.394000 write(3, \"x\", 1 <unfinished ...>\n\
             10315 00:05:28.394100 <... write resumed>) = 1 <0.000100>\n\
             10315 00:05:28.395000 pwrite64(3, \"x\", 4096, 8192) = 4096 <0.000010>\n\
             10315 00:05:28.395500 --- SIGCHLD {si_signo=SIGCHLD} ---\n\
             10315 00:05:28.396000 fsync(3) = 0 <0.001000>\n\
             10315 00:05:28.397000 openat(AT_FDCWD, \"/nope\", O_RDONLY) = -1 ENOENT (No such file or directory) <0.000009>\n\
             10315 00:05:28.398000 +++ exited with 0 +++\n",
        )
        .unwrap();
        assert_eq!(v.len(), 7);
        let open = &v[1];
        assert_eq!(
            (open.name.as_str(), open.fd, open.time_ns, open.duration_ns),
            ("openat", Some(3), (5 * 60 + 28) * 1_000_000_000 + 392_727_000, Some(151_000))
        );
        assert_eq!((v[2].offset, v[2].size, v[2].path.as_deref()), (Some(0), Some(100), Some("/tmp/xx")));
        assert_eq!((v[3].offset, v[3].result), (Some(100), Some(1)));
        assert_eq!(v[4].offset, Some(8192));
        assert_eq!((v[5].name.as_str(), v[5].path.as_deref()), ("fsync", Some("/tmp/xx")));
        assert_eq!((v[6].result, v[6].fd), (Some(-1), None));
    }

    #[test]
    fn a_thread_that_names_itself_is_known_by_that_name() {
        let v = parse(
            "1 00:00:00.000001 execve(\"/usr/bin/forefront\", [\"forefront\"], 0x1 /* 3 vars */) = 0 <0.000100>\n\
             1 00:00:00.000002 clone(child_stack=NULL, flags=SIGCHLD) = 2 <0.000010>\n\
             2 00:00:00.000003 prctl(PR_SET_NAME, \"ff-bg-seq-write-and-more\") = 0 <0.000005>\n\
             2 00:00:00.000004 openat(AT_FDCWD, \"/a\", O_RDONLY) = 5 <0.000010>\n\
             1 00:00:00.000005 prctl(PR_SET_NAME, \"x\") = -1 EINVAL (Invalid argument) <0.000005>\n\
             1 00:00:00.000006 openat(AT_FDCWD, \"/b\", O_RDONLY) = 6 <0.000010>\n",
        )
        .unwrap();
        let comm = |path: &str| v.iter().find(|r| r.path.as_deref() == Some(path)).and_then(|r| r.comm.clone());
        // Cut to 15 bytes as the kernel's comm; a failed call names nothing.
        assert_eq!(comm("/a").as_deref(), Some("ff-bg-seq-write"));
        assert_eq!(comm("/b").as_deref(), Some("forefront"));
    }

    #[test]
    fn clone_files_shares_the_table() {
        let v = parse(
            "1 00:00:00.000001 clone(child_stack=0x1, flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_THREAD) = 2 <0.000010>\n\
             2 00:00:00.000002 openat(AT_FDCWD, \"/a\", O_RDONLY) = 5 <0.000010>\n\
             1 00:00:00.000003 read(5, \"\", 10) = 10 <0.000010>\n\
             3 00:00:00.000004 read(5</b>, \"\", 10) = 10 <0.000010>\n",
        )
        .unwrap();
        assert_eq!(v[2].path.as_deref(), Some("/a"));
        assert_eq!(v[3].path.as_deref(), Some("/b"));
    }

    #[test]
    fn exits_free_fd_tables_and_forks_are_bounded() {
        // pid 2 exits; a later process with pid 2 starts with a table of its own, not the old one.
        let v = parse(
            "1 00:00:00.000001 clone(child_stack=NULL, flags=SIGCHLD) = 2 <0.000010>\n\
             2 00:00:00.000002 openat(AT_FDCWD, \"/old\", O_RDONLY) = 5 <0.000010>\n\
             2 00:00:00.000003 +++ exited with 0 +++\n\
             2 00:00:00.000004 read(5, \"\", 10) = 10 <0.000010>\n",
        )
        .unwrap();
        assert_eq!(v[2].path, None);
        let mut p = StraceParser::default();
        let mut out = VecDeque::new();
        p.parse_line("1 00:00:00.000001 openat(AT_FDCWD, \"/a\", O_RDONLY) = 3 <0.000010>", &mut out).unwrap();
        p.parse_line("1 00:00:00.000002 clone(child_stack=NULL, flags=SIGCHLD) = 2 <0.000010>", &mut out).unwrap();
        assert_eq!(p.tracked_fds, 2);
        p.parse_line("2 00:00:00.000003 +++ exited with 0 +++", &mut out).unwrap();
        assert_eq!((p.tracked_fds, p.tables.len()), (1, 1));
        // Many open files times many forks: refused at the limit, not grown without bound.
        let mut p = StraceParser::default();
        let files = 1100;
        for fd in 0..files {
            p.parse_line(&format!("1 00:00:00.000001 openat(AT_FDCWD, \"/f\", O_RDONLY) = {} <0.000010>", fd + 3), &mut out)
                .unwrap();
        }
        let mut err = None;
        for child in 2..2000u32 {
            if let Err(e) =
                p.parse_line(&format!("1 00:00:00.000002 clone(child_stack=NULL, flags=SIGCHLD) = {child} <0.000010>"), &mut out)
            {
                err = Some((child, e));
                break;
            }
        }
        let (child, e) = err.expect("the limit is reached");
        assert_eq!(child as usize, MAX_TRACKED_FDS / files + 1, "{}", e.message);
        assert!(e.message.starts_with("more than 1048576 file descriptors open in all processes together"), "{}", e.message);
        assert!(p.tracked_fds <= MAX_TRACKED_FDS);
    }

    #[test]
    fn strict_errors() {
        let e = parse("1 00:00:00.000001 <... read resumed>) = 1 <0.1>\n").unwrap_err();
        assert!(e.message.contains("without an earlier"), "{}", e.message);
        assert_eq!(e.column, 19);
        let e = parse("1 xx read(3) = 1\n").unwrap_err();
        assert_eq!(e.column, 3);
        let e = parse("1 18446744073709551616.000000 close(3) = 0 <0.1>\n").unwrap_err();
        assert!(e.message.contains("timestamp `18446744073709551616.000000` s is out of range"), "{}", e.message);
        let e = parse("1 25:00:00.000000 close(3) = 0 <0.1>\n").unwrap_err();
        assert!(e.message.contains("is not a time of day"), "{}", e.message);
        let e = parse("1 00:00:00.000001 read(3, \"\", 1) <0.1>\n").unwrap_err();
        assert!(e.message.contains("missing `) = result`"), "{}", e.message);
        // A string literal that never closes (a cut or corrupt line) mid-file is an error,
        // not a record without its path.
        let e = parse(
            "1 00:00:00.000001 close(3) = 0 <0.1>\n\
             1 00:00:00.000002 openat(AT_FDCWD, \"/data/x, O_RDONLY) = 3 <0.1>\n\
             1 00:00:00.000003 close(3) = 0 <0.1>\n",
        )
        .unwrap_err();
        assert!(e.message.contains("unterminated string literal"), "{}", e.message);
        assert_eq!(e.column, 36);
        // More than one call can move, or past the largest file offset.
        let e = parse("1 00:00:00.000001 read(3, \"\"..., 4294967296) = 4294967296 <0.1>\n").unwrap_err();
        assert!(e.message.contains("read: size 4294967296: more than one read or write transfers"), "{}", e.message);
        let e = parse("1 00:00:00.000001 pread64(3, \"\"..., 10, 9223372036854775800) = 10 <0.1>\n").unwrap_err();
        assert!(e.message.contains("past the largest file offset"), "{}", e.message);
        // A large buffer with a small result is fine.
        let v = parse(
            "1 00:00:00.000001 read(3, \"\"..., 18446744073709551615) = 10 <0.1>\n\
             1 00:00:00.000002 read(3, \"\"..., 18446744073709551615) = ?\n",
        )
        .unwrap();
        assert_eq!((v[0].result, v[0].size), (Some(10), Some(MAX_RW_COUNT)));
        // With no result, the count stands for the bytes moved: at most what one call moves.
        assert_eq!((v[1].result, v[1].size, v[1].offset), (None, Some(MAX_RW_COUNT), Some(10)));
        // Escaped quotes and strings cut by `-s` are terminated.
        let v = parse("1 00:00:00.000001 write(1, \"say \\\"hi\\\" \"..., 40) = 40 <0.1>\n").unwrap();
        assert_eq!(v[0].size, Some(40));
    }
}
