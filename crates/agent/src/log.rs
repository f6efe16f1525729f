//! The agent's log, written by a thread of its own so that a log line never makes a launch wait.
//!
//! The daemon logs while a launcher waits for its reply (`foreground: pid N, burst`, then the
//! reply's timing). A synchronous `write(2)` to stderr there waits for whatever holds stderr: a
//! file on the disk the background is filling blocks in the file system (a journal handle, dirty
//! throttling), a full pipe to a slow reader blocks outright. Measured on the S suite (xterm,
//! 5 writers, the agent's stderr in a file on the same ext4 file system; docs/agent.md, "The
//! real-time I/O class for a start-up, and the agent's log off the launch path"): the time from
//! the request to the reply was 8.2 ms at the median and 60.7 ms at the 90th percentile, against
//! 0.1–0.3 ms with the same file on tmpfs.
//!
//! So [`stderr_log`] only formats the line and hands it to a writer thread over a bounded queue
//! ([`CAPACITY`] lines). The thread writes lines in the order they were logged. When the queue is
//! full (stderr blocked for that long) a line is dropped and counted, and the thread writes
//! `N log line(s) dropped` once it has caught up: the daemon never waits for its log.
//! [`flush`] waits (at most a given time) until every line logged before it is written; the CLI
//! calls it before the process exits, so the shutdown's lines (what was restored) are not lost.
//!
//! The writer thread is started with every signal blocked: the agent receives SIGTERM, SIGINT
//! and SIGHUP in one thread of its own ([`crate::run`]), and a thread that did not block them
//! could be picked to receive one.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::OnceLock;
use std::time::Duration;

/// Lines the queue holds while the writer is blocked.
pub const CAPACITY: usize = 4096;

enum Msg {
    Line(String),
    Flush(mpsc::Sender<()>),
}

/// A log whose lines a thread of its own writes to `W`.
pub struct Logger {
    tx: SyncSender<Msg>,
    dropped: std::sync::Arc<AtomicU64>,
}

impl Logger {
    /// Starts the writer thread (signals blocked in it) on `out`, with a queue of `capacity`
    /// lines. `None` if the thread cannot be started.
    pub fn spawn<W: Write + Send + 'static>(mut out: W, capacity: usize) -> Option<Logger> {
        let (tx, rx): (SyncSender<Msg>, Receiver<Msg>) = mpsc::sync_channel(capacity.max(1));
        let dropped = std::sync::Arc::new(AtomicU64::new(0));
        let seen = dropped.clone();
        // Every signal blocked while the thread is created: it inherits the mask.
        use nix::sys::signal::{SigSet, SigmaskHow};
        let old = SigSet::all().thread_swap_mask(SigmaskHow::SIG_BLOCK).ok();
        let spawned = std::thread::Builder::new().name("agent-log".into()).spawn(move || {
            while let Ok(first) = rx.recv() {
                // Everything queued now, in order; then, caught up, the count of lines dropped
                // meanwhile, and the acknowledgements of the flushes among them.
                let mut acks = vec![];
                let mut next = Some(first);
                while let Some(msg) = next.take() {
                    match msg {
                        Msg::Line(text) => {
                            let _ = out.write_all(text.as_bytes());
                        }
                        Msg::Flush(ack) => acks.push(ack),
                    }
                    next = rx.try_recv().ok();
                }
                let n = seen.swap(0, Ordering::Relaxed);
                if n > 0 {
                    let _ = writeln!(out, "forefront-agent: {n} log line(s) dropped: the log's output did not keep up");
                }
                let _ = out.flush();
                for ack in acks {
                    let _ = ack.send(());
                }
            }
        });
        if let Some(old) = old {
            let _ = old.thread_set_mask();
        }
        spawned.ok().map(|_| Logger { tx, dropped })
    }

    /// Queues `text` (a whole line, its newline included); never waits. False if the queue was
    /// full (the line is counted as dropped) or the writer is gone.
    pub fn log(&self, text: String) -> bool {
        match self.tx.try_send(Msg::Line(text)) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                false
            }
            Err(TrySendError::Disconnected(_)) => false,
        }
    }

    /// Waits at most `timeout` until every line queued before this call is written. False on
    /// timeout (the output is blocked) or if the writer is gone.
    pub fn flush(&self, timeout: Duration) -> bool {
        let (ack, done) = mpsc::channel();
        let deadline = std::time::Instant::now() + timeout;
        // The queue may be full: retry until the deadline rather than wait on `send`.
        let mut msg = Msg::Flush(ack);
        loop {
            match self.tx.try_send(msg) {
                Ok(()) => break,
                Err(TrySendError::Full(m)) => {
                    if std::time::Instant::now() >= deadline {
                        return false;
                    }
                    msg = m;
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(TrySendError::Disconnected(_)) => return false,
            }
        }
        done.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now())).is_ok()
    }
}

static STDERR: OnceLock<Option<Logger>> = OnceLock::new();

fn line_of(line: &str) -> String {
    format!("forefront-agent: {}\n", crate::control::escape_upto(line, 4096))
}

/// The CLI's log: one line per call on stderr, control characters escaped (a client's string
/// quoted in a message cannot start a line of its own), at most 4 KiB; written by the log's
/// thread (the module doc), or here if that thread could not be started.
pub fn stderr_log(line: &str) {
    let text = line_of(line);
    match STDERR.get_or_init(|| Logger::spawn(std::io::stderr(), CAPACITY)) {
        Some(l) => {
            l.log(text);
        }
        None => {
            let _ = std::io::stderr().write_all(text.as_bytes());
        }
    }
}

/// Waits at most `timeout` for [`stderr_log`]'s lines to be written (before the process exits).
pub fn flush(timeout: Duration) -> bool {
    match STDERR.get() {
        Some(Some(l)) => l.flush(timeout),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// An output that blocks every write until released, then records what it is given.
    #[derive(Clone)]
    struct Gate {
        open: Arc<(Mutex<bool>, std::sync::Condvar)>,
        got: Arc<Mutex<Vec<u8>>>,
        /// Writes begun (the writer thread is inside `write` once this is 1).
        entered: Arc<std::sync::atomic::AtomicUsize>,
    }

    impl Write for Gate {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.entered.fetch_add(1, Ordering::SeqCst);
            let (lock, cv) = &*self.open;
            let mut open = lock.lock().unwrap();
            while !*open {
                open = cv.wait(open).unwrap();
            }
            self.got.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Gate {
        fn closed() -> Gate {
            Gate { open: Arc::new((Mutex::new(false), std::sync::Condvar::new())), got: Arc::default(), entered: Arc::default() }
        }
        fn release(&self) {
            *self.open.0.lock().unwrap() = true;
            self.open.1.notify_all();
        }
        fn lines(&self) -> Vec<String> {
            String::from_utf8(self.got.lock().unwrap().clone()).unwrap().lines().map(str::to_owned).collect()
        }
    }

    #[test]
    fn logging_never_waits_for_a_blocked_output_and_keeps_the_order() {
        let out = Gate::closed();
        let log = Logger::spawn(out.clone(), 64).expect("thread");
        // The output is blocked: every call still returns (a wait would hang this test).
        for i in 0..10 {
            assert!(log.log(format!("line {i}\n")));
        }
        assert!(out.lines().is_empty(), "nothing written while the output is blocked");
        assert!(!log.flush(Duration::from_millis(50)), "a flush times out while the output is blocked");
        out.release();
        assert!(log.flush(Duration::from_secs(10)));
        let want: Vec<String> = (0..10).map(|i| format!("line {i}")).collect();
        assert_eq!(out.lines(), want);
    }

    #[test]
    fn a_full_queue_drops_lines_and_says_how_many() {
        let out = Gate::closed();
        let log = Logger::spawn(out.clone(), 4).expect("thread");
        // The first line reaches the writer, which blocks in it; then the queue takes 4 more.
        assert!(log.log("line 0\n".into()));
        while out.entered.load(Ordering::SeqCst) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        let queued = 1 + (1..20).filter(|i| log.log(format!("line {i}\n"))).count();
        assert_eq!(queued, 5, "the line being written and a queue of 4");
        out.release();
        assert!(log.flush(Duration::from_secs(10)));
        log.log("after\n".into());
        assert!(log.flush(Duration::from_secs(10)));
        let lines = out.lines();
        // The lines taken, in order, then the count of the rest, then the next line.
        let taken: Vec<String> = (0..queued).map(|i| format!("line {i}")).collect();
        assert_eq!(lines[..queued], taken[..]);
        assert_eq!(
            lines[queued],
            format!("forefront-agent: {} log line(s) dropped: the log's output did not keep up", 20 - queued)
        );
        assert_eq!(lines[queued + 1..], ["after".to_string()]);
    }

    #[test]
    fn a_line_is_escaped_and_cut_as_before() {
        assert_eq!(line_of("a\nb"), "forefront-agent: a\\nb\n");
        assert!(line_of(&"x".repeat(10_000)).len() < 4200);
    }
}
