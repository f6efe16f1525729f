//! The foreground-first agent for a real Linux kernel.
//!
//! The foreground app is *pushed* (by a launcher, a window-focus watcher or a user) over the
//! control socket; the agent classifies processes ([`forefront_policy::classify`]), moves them
//! into its `fg` and `bg` groups, sets CPU and I/O weights, idle I/O priority, and pauses
//! background work during launch/switch bursts with a hard deadline.
//!
//! - [`daemon`]: the [`daemon::Event`] enum and [`daemon::Agent`], the state between events.
//! - [`run`]: the one loop (signals, socket, rescans, deadlines).
//! - [`config`]: the TOML configuration ([`config::Config`], defaults in `Default`).
//! - [`state`]: the crash-safe [`state::Journal`] of original values, in a directory only the
//!   agent can write, naming only what the agent changes ([`state::Bounds`]).
//! - [`watchdog`]: the process that thaws background work if the agent dies.
//! - [`control`] and [`proto`]: the Unix socket (credentials, a deadline per request, per-uid
//!   limits, escaped logs) and its JSON-lines protocol ([`proto::parse`] validates every field).
//! - [`pause`]: the pure rule bounding pauses ([`pause::PauseGate`]).
//! - [`dbus`]: the same requests as D-Bus methods (`org.forefront.Agent1`).
//! - [`focus`]: focus follows: the focused X11 window's process is the foreground.
//! - [`iosched`]: which I/O mechanisms the disks' schedulers and the io hierarchy offer, and
//!   which the agent uses (BFQ weights, idle I/O class, `io.weight`, `io.latency`).
//! - [`check`]: which kernel capabilities are missing.
//! - [`writeback`]: the write-back settings held during a pause.
//! - [`pin`]: the launcher's helper (`[agent] pin_exec`) and the agent's own pages
//!   (`[agent] lock_memory`) kept in memory.
//! - [`dynmods`]: cgroup moves without an RCU grace period (`[agent] favor_dynmods`).
//! - [`prefetch`]: a switched-to app's working set read back before it asks (`[prefetch]`).
//! - [`log`]: the log, written by a thread of its own (a log line never makes a launch wait).
//!
//! ```no_run
//! use forefront_agent::{config::Config, control, proto::Request};
//! let cfg = Config::default();
//! // In a launcher: the app with pid 1234 is starting.
//! let r = control::request(&cfg.agent.socket, &Request::Fg { pid: Some(1234), uid: None, cgroup: None, burst: true })?;
//! assert!(r.ok);
//! // ... first frame drawn:
//! control::request(&cfg.agent.socket, &Request::BurstEnd {})?;
//! # Ok::<(), forefront_agent::control::ClientError>(())
//! ```

pub mod check;
pub mod config;
pub mod control;
pub mod daemon;
pub mod dbus;
pub mod dynmods;
pub mod focus;
pub mod iosched;
pub mod log;
pub mod pause;
pub mod pin;
pub mod prefetch;
pub mod procevents;
/// The control protocol (its own crate, so that clients need not link the agent).
pub use forefront_proto as proto;
pub mod state;
pub mod watchdog;
pub mod writeback;

use std::path::Path;
use std::sync::mpsc;

use daemon::{Agent, AgentError, Event};

/// `[agent] pin_exec`: maps and locks `forefront-exec` beside the agent's executable.
fn pin_helper(cfg: &config::Config, exe: Option<&Path>, log: fn(&str)) -> Option<pin::Pinned> {
    if !cfg.agent.pin_exec {
        return None;
    }
    let own = std::env::current_exe().ok();
    let Some(exe) = exe.or(own.as_deref()) else {
        log("pin_exec: the agent's own executable is unknown: helper not pinned");
        return None;
    };
    let helper = pin::helper_beside(exe);
    match pin::Pinned::new(&helper) {
        Ok(p) => {
            log(&format!("pin_exec: {} ({} bytes) locked in memory", p.path.display(), p.len()));
            Some(p)
        }
        Err(e) => {
            log(&format!("pin_exec: helper not pinned: {e}"));
            None
        }
    }
}

/// Runs the agent until SIGTERM, SIGINT or SIGHUP, then restores every original value.
/// `exe` is the `forefront` binary, run again as the watchdog.
pub fn run(cfg: config::Config, exe: Option<&Path>, log: fn(&str)) -> Result<(), AgentError> {
    use nix::sys::signal::{SigSet, Signal};
    // Block the signals in this thread before any other exists, so every thread inherits the
    // mask and only the signal thread below receives them (as events, in order).
    let mut set = SigSet::empty();
    for s in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        set.add(s);
    }
    set.thread_block().map_err(|e| AgentError::Nothing(format!("cannot block signals: {e}")))?;
    // Before any other thread exists (their stacks are then locked only as they are used), and
    // before the agent's first pause could read its code from the disk beside a launch.
    if cfg.agent.lock_memory {
        match pin::lock_self() {
            Ok(bytes) => {
                log(&format!("lock_memory: {:.1} MiB of the agent's code and data locked in memory", bytes as f64 / 1048576.0))
            }
            Err(e) => log(&format!("lock_memory: not locked: {e}")),
        }
    }
    let (tx, rx) = mpsc::channel();
    {
        let tx = tx.clone();
        std::thread::spawn(move || loop {
            if let Ok(sig) = set.wait() {
                if tx.send(Event::Signal(sig as i32)).is_err() {
                    return;
                }
            }
        });
    }
    let mut agent = Agent::start(cfg.clone(), exe, log)?;
    // Before the first scan and its moves (the journal's directory, where it mounts, exists now).
    dynmods::favor(cfg.agent.favor_dynmods, &cfg.agent.root, &cfg.agent.state, log);
    // Held for the loop's lifetime: the launcher's helper stays in memory.
    let _pinned = pin_helper(&cfg, exe, log);
    let listener = match control::bind(&cfg.agent.socket) {
        Ok(l) => l,
        Err(e) => {
            agent.shutdown();
            return Err(e);
        }
    };
    {
        let allow = cfg.control.clone();
        let tx = tx.clone();
        std::thread::spawn(move || control::serve(listener, allow, tx, log));
    }
    log(&format!("listening on {}", cfg.agent.socket.display()));
    // Held for the loop's lifetime: the interface is served while the connection lives.
    let _bus = match start_dbus(&cfg, tx.clone(), log) {
        Ok(b) => b,
        Err(e) => {
            agent.shutdown();
            let _ = std::fs::remove_file(&cfg.agent.socket);
            return Err(e);
        }
    };
    if let Err(e) = start_focus(&cfg, tx.clone(), log) {
        agent.shutdown();
        let _ = std::fs::remove_file(&cfg.agent.socket);
        return Err(e);
    }
    if !cfg.rules.is_empty() {
        match procevents::listen() {
            Ok(ev) => {
                let tx = tx.clone();
                std::thread::spawn(move || loop {
                    match ev.next() {
                        Ok(pids) => {
                            for pid in pids {
                                if tx.send(Event::Exec(pid)).is_err() {
                                    return;
                                }
                            }
                        }
                        Err(e) => {
                            log(&format!("rules: exec notifications stopped ({e}); rules fire at rescans"));
                            return;
                        }
                    }
                });
                log("rules: watching program starts (process-events connector)");
            }
            Err(e) => {
                log(&format!("rules: no exec notifications ({e}); rules fire at rescans, every {} ms", cfg.agent.rescan_ms))
            }
        }
    }
    loop {
        match rx.recv_timeout(agent.next_wake()) {
            Ok(Event::Request { req, peer, reply }) => {
                let _ = reply.send(agent.handle(req, peer));
                // Let the connection's thread write the reply before the work that follows it
                // (a woken thread often shares this core: it would wait behind the scan).
                std::thread::yield_now();
                // After the reply: what a launcher need not wait for.
                agent.after_reply();
            }
            Ok(Event::Focus(change)) => {
                agent.on_focus(change);
                agent.after_reply();
            }
            Ok(Event::Exec(pid)) => {
                agent.on_exec(pid);
                agent.after_reply();
            }
            Ok(Event::Signal(sig)) => {
                log(&format!("signal {sig}: restoring and exiting"));
                break;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        agent.tick();
    }
    agent.shutdown();
    let _ = std::fs::remove_file(&cfg.agent.socket);
    Ok(())
}

/// Starts the X11 focus watcher (`[focus] x11`): a thread that sends [`Event::Focus`] on every
/// change of the focused window, reconnecting every [`focus::RECONNECT`] when the X server is
/// not (or no longer) there. With `x11 = "on"`, a display that cannot be reached at start is an
/// error; with `"auto"` and no display named anywhere, focus following is off.
fn start_focus(cfg: &config::Config, tx: mpsc::Sender<Event>, log: fn(&str)) -> Result<(), AgentError> {
    use config::Toggle;
    use focus::X11Watcher;
    let display = Some(cfg.focus.display.clone()).filter(|d| !d.is_empty()).or_else(|| std::env::var("DISPLAY").ok());
    let display = match (cfg.focus.x11, display) {
        (Toggle::Off, _) => return Ok(()),
        (Toggle::Auto, None) => {
            log("focus: no X display named (focus.display empty, $DISPLAY unset): focus following off");
            return Ok(());
        }
        (Toggle::On, None) => {
            return Err(AgentError::Nothing("focus.x11 = \"on\" but no X display is named (focus.display, $DISPLAY)".into()))
        }
        (_, Some(d)) => d,
    };
    let first = match X11Watcher::connect(Some(&display)) {
        Ok(w) => Some(w),
        Err(e) if cfg.focus.x11 == Toggle::On => return Err(AgentError::Nothing(format!("focus.x11 = \"on\": {e}"))),
        Err(e) => {
            log(&format!("focus: {e}; trying again every {} s", focus::RECONNECT.as_secs()));
            None
        }
    };
    std::thread::spawn(move || {
        let mut watcher = first;
        loop {
            let Some(w) = watcher.take().or_else(|| X11Watcher::connect(Some(&display)).ok()) else {
                std::thread::sleep(focus::RECONNECT);
                continue;
            };
            log(&format!("focus: following _NET_ACTIVE_WINDOW on X display {}", w.display));
            let mut change = w.current();
            loop {
                match change {
                    Ok(c) => {
                        if tx.send(Event::Focus(c)).is_err() {
                            return;
                        }
                    }
                    Err(e) => {
                        log(&format!("focus: {e}; reconnecting"));
                        break;
                    }
                }
                change = w.next();
            }
            std::thread::sleep(focus::RECONNECT);
        }
    });
    Ok(())
}

/// Serves the D-Bus interface (`[dbus]`); `None` where it is off, or `"auto"` and the bus is
/// missing or refuses the name.
fn start_dbus(
    cfg: &config::Config,
    tx: mpsc::Sender<Event>,
    log: fn(&str),
) -> Result<Option<zbus::blocking::Connection>, AgentError> {
    use config::Toggle;
    if cfg.dbus.enabled == Toggle::Off {
        return Ok(None);
    }
    match dbus::serve(&cfg.dbus.address, cfg.control.clone(), tx, log) {
        Ok(c) => {
            log(&format!("dbus: serving {} at {}", dbus::NAME, dbus::PATH));
            Ok(Some(c))
        }
        Err(e) if cfg.dbus.enabled == Toggle::On => Err(e),
        Err(e) => {
            log(&format!("{e}: D-Bus interface off"));
            Ok(None)
        }
    }
}
