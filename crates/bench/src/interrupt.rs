//! Ctrl-C, SIGTERM and SIGHUP end a benchmark through its cleanup, not around it.
//!
//! The default action of those signals kills the process before any destructor runs, leaving
//! what the run set up behind: a mounted loop image, an attached loop device, an I/O scheduler
//! switched to BFQ, background workers writing for minutes, an agent's cgroups. [`install`]
//! replaces that action with a flag; the runner polls [`requested`] between steps (and while it
//! waits) and returns [`BenchError::Interrupted`](crate::runner::BenchError::Interrupted), so
//! every guard (`Kids`, `AgentChild`, `SchedGuard`, `WorkDir`, `LoopFs`) is dropped on the way
//! out. The child processes (`bench worker`, `bench op`) also ask the kernel to kill them when
//! their parent dies ([`die_with_parent`]), so even a SIGKILLed benchmark leaves no worker.

use std::sync::atomic::{AtomicBool, Ordering};

use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};

static REQUESTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    REQUESTED.store(true, Ordering::SeqCst);
}

/// Route SIGINT, SIGTERM and SIGHUP to the flag (for the rest of the process's life).
pub fn install() -> nix::Result<()> {
    // SA_RESTART would resume a blocking read of a child's pipe; without it the read returns
    // EINTR and the runner sees the request at once.
    let action = SigAction::new(SigHandler::Handler(on_signal), SaFlags::empty(), SigSet::empty());
    for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // SAFETY: the handler only stores to an atomic.
        unsafe { sigaction(s, &action) }?;
    }
    Ok(())
}

/// Whether a stop was requested.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// In a child process: be killed (SIGKILL) when the parent dies, even without a chance to clean
/// up; exits at once if the parent is already gone.
pub fn die_with_parent() -> nix::Result<()> {
    let parent = nix::unistd::getppid();
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
    if nix::unistd::getppid() != parent {
        std::process::exit(1);
    }
    Ok(())
}

/// Name the calling process (its `comm`, at most 15 bytes: longer names are cut) so that a
/// scheduler or block trace tells the bench's processes apart: every one of them is otherwise
/// `forefront`. The bench names its foreground operation `ff-op-<fg>` and each background worker
/// `ff-bg-<kind>` (`scripts/sched-probe` reads the roles from these names); threads inherit it.
pub fn set_process_name(name: &str) -> nix::Result<()> {
    let bytes: Vec<u8> = name.bytes().filter(|&b| b != 0).take(15).collect();
    let c = std::ffi::CString::new(bytes).expect("NUL bytes removed");
    nix::sys::prctl::set_name(&c)
}

#[cfg(test)]
mod tests {
    /// The name is the thread's `comm`, cut to the kernel's 15 bytes.
    #[test]
    fn a_process_name_is_its_comm_cut_to_15_bytes() {
        std::thread::spawn(|| {
            super::set_process_name("ff-bg-seq-write-and-more").unwrap();
            let comm = std::fs::read_to_string("/proc/thread-self/comm").unwrap();
            assert_eq!(comm.trim_end(), "ff-bg-seq-write");
        })
        .join()
        .unwrap();
    }
}
