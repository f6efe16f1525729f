//! `sim compare`'s progress bar: drawn when stderr is a terminal, absent when it is piped. The
//! terminal is a pseudo-terminal (`openpty`), so the test needs no real one and runs in CI.

use std::io::Read;
use std::process::{Command, Stdio};

use nix::pty::{openpty, Winsize};

const BIN: &str = env!("CARGO_BIN_EXE_forefront");
/// Three runs (the FG-only baseline and android at 1 and 2 BG apps): more than one, so a bar.
const ARGS: [&str; 7] = ["sim", "compare", "camera-switch", "--policy", "android", "--bg-apps", "1,2"];

/// Runs `forefront ARGS` with stderr on a pseudo-terminal; returns (success, stdout, what the
/// terminal received).
fn on_a_terminal() -> (bool, String, String) {
    let size = Winsize { ws_row: 24, ws_col: 100, ws_xpixel: 0, ws_ypixel: 0 };
    let pty = openpty(Some(&size), None).expect("openpty");
    let mut master = std::fs::File::from(pty.master);
    let child = {
        // The Command holds a copy of the terminal's slave side: dropped at the end of this
        // block, so the child's exit closes the last one and reading the master ends.
        let mut cmd = Command::new(BIN);
        cmd.args(ARGS).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::from(pty.slave));
        cmd.spawn().expect("run forefront")
    };
    let reader = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match master.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
                // EIO: every slave side is closed (the child exited).
                Err(_) => break,
            }
        }
        seen
    });
    let out = child.wait_with_output().expect("wait");
    let seen = reader.join().expect("reader");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&seen).into_owned())
}

#[test]
fn compare_draws_a_progress_bar_on_a_terminal_only() {
    let (ok, stdout, terminal) = on_a_terminal();
    assert!(ok, "{terminal}");
    assert!(terminal.contains("/3 runs, "), "no progress bar on the terminal: {terminal:?}");
    assert!(terminal.contains('\u{1b}'), "drawn and cleared with terminal escapes: {terminal:?}");
    assert!(stdout.contains("android") && !stdout.contains(" runs, "), "the table, without the bar, on stdout");

    let piped = Command::new(BIN).args(ARGS).output().unwrap();
    assert!(piped.status.success());
    let err = String::from_utf8_lossy(&piped.stderr);
    assert!(!err.contains(" runs, ") && !err.contains('\u{1b}'), "a bar on a pipe: {err:?}");
    // The same table either way.
    assert_eq!(String::from_utf8_lossy(&piped.stdout), stdout);
}
