//! Focus follows: the process of the focused window becomes the foreground.
//!
//! On X11 the window manager names the focused window in the root window's EWMH
//! `_NET_ACTIVE_WINDOW` property; [`X11Watcher`] asks the server for a `PropertyNotify` on every
//! change (pushed, not polled), maps the window to its process — the client's own
//! `_NET_WM_PID`, else the X server's answer through the XRes extension's client-id query
//! (`XResQueryClientIds` with `LocalClientPID`), which needs no help from the client — and
//! hands a [`FocusChange`] to the agent's loop. The loop asks the pure [`FocusTracker`] what to
//! do ([`Decision`]) and makes that process tree the foreground through the very request
//! `forefront agent fg PID [--burst]` sends, so focus adds no policy of its own.
//!
//! A burst (the background paused, as for `fg --burst`) starts when focus moves to an app that
//! has not had it for at least `focus.burst_idle_ms` (or never had it since the agent
//! started): a switch back to a long-unused app is the case where its pages and caches have
//! gone cold. Quick alternation between two windows does not burst (and the pause gate's
//! `min_gap_ms` bounds bursts anyway).
//!
//! Where the session is Wayland the compositor alone knows the focus: it calls the agent's
//! D-Bus interface or socket (docs/agent.md, "Focus follows").
//!
//! ```
//! use forefront_agent::focus::{Decision, FocusTracker};
//! let mut t = FocusTracker::new(true, 5_000);
//! assert_eq!(t.on_focus(Some(100), 0), Decision::Foreground { pid: 100, burst: true });
//! assert_eq!(t.on_focus(Some(200), 1_000), Decision::Foreground { pid: 200, burst: true });
//! // Back to 100 after one second: it was not idle long enough for a burst.
//! assert_eq!(t.on_focus(Some(100), 2_000), Decision::Foreground { pid: 100, burst: false });
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

/// The focused window changed (or its owner was looked up again).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FocusChange {
    /// The X window id (`0`: no window has the focus, e.g. the desktop).
    pub window: u32,
    /// The process owning it, if it could be told.
    pub pid: Option<i32>,
    /// How the pid was found: `_NET_WM_PID`, `XRes`, or why not.
    pub via: String,
    /// The focus found when the watcher (re)connected, not a change the user made: it names
    /// the foreground but never starts a burst.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub initial: bool,
}

/// What the agent does about one focus change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Make this process (and its descendants) the foreground; with `burst`, pause the
    /// background as `fg --burst` does.
    Foreground { pid: i32, burst: bool },
    /// The focused app is the foreground already.
    Same,
    /// The focused window's process is unknown (no window, or neither `_NET_WM_PID` nor XRes
    /// named it): the foreground stays what it was.
    Unknown,
}

/// The most apps whose last focus time is kept (the oldest are forgotten first; a forgotten
/// app counts as never focused).
const MAX_REMEMBERED: usize = 4096;

/// The pure decision of focus following: which process is the foreground and whether a switch
/// to it starts a burst. Times are the agent's milliseconds since start.
#[derive(Clone, Debug)]
pub struct FocusTracker {
    burst: bool,
    burst_idle_ms: u64,
    current: Option<i32>,
    /// pid → when it last lost the focus (ms).
    left_at: BTreeMap<i32, u64>,
}

impl FocusTracker {
    pub fn new(burst: bool, burst_idle_ms: u64) -> Self {
        FocusTracker { burst, burst_idle_ms, current: None, left_at: BTreeMap::new() }
    }

    /// The process that has the focus now, if known.
    pub fn current(&self) -> Option<i32> {
        self.current
    }

    /// Focus moved to a window owned by `pid` (`None`: unknown) at `now_ms`.
    pub fn on_focus(&mut self, pid: Option<i32>, now_ms: u64) -> Decision {
        let Some(pid) = pid else { return Decision::Unknown };
        if self.current == Some(pid) {
            return Decision::Same;
        }
        if let Some(old) = self.current.replace(pid) {
            self.left_at.insert(old, now_ms);
            if self.left_at.len() > MAX_REMEMBERED {
                if let Some((&oldest, _)) = self.left_at.iter().min_by_key(|(_, t)| **t) {
                    self.left_at.remove(&oldest);
                }
            }
        }
        let idle = match self.left_at.remove(&pid) {
            Some(t) => now_ms.saturating_sub(t) >= self.burst_idle_ms,
            None => true,
        };
        Decision::Foreground { pid, burst: self.burst && idle }
    }

    /// The process `pid` is gone (or the request about it was refused): forget it, so that a
    /// new process reusing its pid starts afresh.
    pub fn forget(&mut self, pid: i32) {
        self.left_at.remove(&pid);
        if self.current == Some(pid) {
            self.current = None;
        }
    }
}

/// What the focus watcher needs from an X server: the property reads behind one focus change.
/// [`X11Watcher`] implements it on a real connection; tests use a fake.
pub trait WindowSource {
    /// The window named by the root window's `_NET_ACTIVE_WINDOW` (`None`: property absent).
    fn active_window(&self) -> Result<Option<u32>, String>;
    /// The window's `_NET_WM_PID` (set by the client itself).
    fn net_wm_pid(&self, window: u32) -> Result<Option<u32>, String>;
    /// The pid of the client that created the window, from the X server (XRes); `None` when
    /// the extension is missing or the client is not local.
    fn xres_pid(&self, window: u32) -> Result<Option<u32>, String>;
}

/// Reads the focused window and its process: `_NET_WM_PID` first, XRes where it is missing.
/// A pid of 0 or 1, or one not representable as a pid, counts as unknown.
pub fn resolve(src: &dyn WindowSource) -> Result<FocusChange, String> {
    let valid = |p: u32| i32::try_from(p).ok().filter(|p| *p > 1);
    let window = match src.active_window()? {
        None | Some(0) => return Ok(FocusChange { window: 0, pid: None, via: "no active window".into(), initial: false }),
        Some(w) => w,
    };
    if let Some(pid) = src.net_wm_pid(window)?.and_then(valid) {
        return Ok(FocusChange { window, pid: Some(pid), via: "_NET_WM_PID".into(), initial: false });
    }
    match src.xres_pid(window) {
        Ok(Some(p)) => match valid(p) {
            Some(pid) => Ok(FocusChange { window, pid: Some(pid), via: "XRes".into(), initial: false }),
            None => Ok(FocusChange { window, pid: None, via: format!("XRes named pid {p}"), initial: false }),
        },
        Ok(None) => {
            Ok(FocusChange { window, pid: None, via: "no _NET_WM_PID; XRes does not know its client".into(), initial: false })
        }
        Err(e) => Ok(FocusChange { window, pid: None, via: format!("no _NET_WM_PID; XRes: {e}"), initial: false }),
    }
}

/// A connection to an X server watching `_NET_ACTIVE_WINDOW`.
pub struct X11Watcher {
    conn: x11rb::rust_connection::RustConnection,
    root: u32,
    active: u32,
    wm_pid: u32,
    has_res: bool,
    /// The display it is connected to (for messages).
    pub display: String,
}

impl X11Watcher {
    /// Connects to `display` (`None`: `$DISPLAY`) and subscribes to the root window's property
    /// changes. The X authority is the usual one (`$XAUTHORITY`, else `~/.Xauthority`).
    pub fn connect(display: Option<&str>) -> Result<Self, String> {
        use x11rb::connection::{Connection, RequestConnection};
        use x11rb::protocol::xproto::{ChangeWindowAttributesAux, ConnectionExt, EventMask};
        let shown = display.map(str::to_owned).or_else(|| std::env::var("DISPLAY").ok()).unwrap_or_default();
        let err = |what: &str, e: &dyn std::fmt::Display| format!("X display {shown:?}: {what}: {e}");
        let (conn, screen) = x11rb::connect(display).map_err(|e| err("cannot connect", &e))?;
        let root = conn.setup().roots[screen].root;
        let atom = |name: &[u8]| -> Result<u32, String> {
            Ok(conn
                .intern_atom(false, name)
                .map_err(|e| err("intern_atom", &e))?
                .reply()
                .map_err(|e| err("intern_atom", &e))?
                .atom)
        };
        let active = atom(b"_NET_ACTIVE_WINDOW")?;
        let wm_pid = atom(b"_NET_WM_PID")?;
        conn.change_window_attributes(root, &ChangeWindowAttributesAux::new().event_mask(EventMask::PROPERTY_CHANGE))
            .map_err(|e| err("select PropertyChange on the root window", &e))?
            .check()
            .map_err(|e| err("select PropertyChange on the root window", &e))?;
        let has_res =
            conn.extension_information(x11rb::protocol::res::X11_EXTENSION_NAME).map_err(|e| err("query XRes", &e))?.is_some();
        if has_res {
            use x11rb::protocol::res::ConnectionExt as _;
            // Client ids need XRes 1.2; the server answers with what it has.
            let ok = conn.res_query_version(1, 2).ok().and_then(|c| c.reply().ok());
            if ok.is_none_or(|v| (v.server_major, v.server_minor) < (1, 2)) {
                return Ok(X11Watcher { conn, root, active, wm_pid, has_res: false, display: shown });
            }
        }
        Ok(X11Watcher { conn, root, active, wm_pid, has_res, display: shown })
    }

    /// Blocks until the active window changes; returns the new focus.
    pub fn next(&self) -> Result<FocusChange, String> {
        use x11rb::connection::Connection;
        use x11rb::protocol::Event as XEvent;
        loop {
            let ev = self.conn.wait_for_event().map_err(|e| format!("X display {:?}: {e}", self.display))?;
            if let XEvent::PropertyNotify(p) = ev {
                if p.window == self.root && p.atom == self.active {
                    return resolve(self);
                }
            }
        }
    }

    /// The focus right now (at start: the window focused before the agent came).
    pub fn current(&self) -> Result<FocusChange, String> {
        resolve(self).map(|c| FocusChange { initial: true, ..c })
    }

    fn card32(&self, window: u32, prop: u32, kind: x11rb::protocol::xproto::AtomEnum) -> Result<Option<u32>, String> {
        use x11rb::protocol::xproto::ConnectionExt;
        let r = self
            .conn
            .get_property(false, window, prop, kind, 0, 1)
            .map_err(|e| e.to_string())?
            .reply()
            .map_err(|e| e.to_string())?;
        Ok(r.value32().and_then(|mut v| v.next()))
    }
}

impl WindowSource for X11Watcher {
    fn active_window(&self) -> Result<Option<u32>, String> {
        self.card32(self.root, self.active, x11rb::protocol::xproto::AtomEnum::WINDOW)
    }

    fn net_wm_pid(&self, window: u32) -> Result<Option<u32>, String> {
        // A window destroyed since the event (BadWindow) has no pid: unknown, not an error.
        Ok(self.card32(window, self.wm_pid, x11rb::protocol::xproto::AtomEnum::CARDINAL).unwrap_or(None))
    }

    fn xres_pid(&self, window: u32) -> Result<Option<u32>, String> {
        use x11rb::protocol::res::{ClientIdMask, ClientIdSpec, ConnectionExt};
        if !self.has_res {
            return Err("the X server has no XRes 1.2".into());
        }
        let spec = ClientIdSpec { client: window, mask: ClientIdMask::LOCAL_CLIENT_PID };
        let r = self.conn.res_query_client_ids(&[spec]).map_err(|e| e.to_string())?.reply().map_err(|e| e.to_string())?;
        Ok(r.ids.iter().find(|id| id.spec.mask == ClientIdMask::LOCAL_CLIENT_PID).and_then(|id| id.value.first().copied()))
    }
}

/// How long the watcher waits before connecting again (the X server is not up yet, or it went
/// away).
pub const RECONNECT: Duration = Duration::from_secs(2);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_switch_bursts_only_into_an_app_idle_long_enough() {
        let mut t = FocusTracker::new(true, 5_000);
        assert_eq!(t.on_focus(Some(100), 0), Decision::Foreground { pid: 100, burst: true }, "never focused: cold");
        assert_eq!(t.on_focus(Some(100), 10), Decision::Same, "another window of the same app");
        assert_eq!(t.on_focus(None, 20), Decision::Unknown);
        assert_eq!(t.current(), Some(100), "an unknown owner keeps the foreground");
        assert_eq!(t.on_focus(Some(200), 1_000), Decision::Foreground { pid: 200, burst: true });
        // 100 lost the focus at 1000: back after 500 ms, no burst; 200 after 20 s, a burst.
        assert_eq!(t.on_focus(Some(100), 1_500), Decision::Foreground { pid: 100, burst: false });
        assert_eq!(t.on_focus(Some(200), 21_500), Decision::Foreground { pid: 200, burst: true });
    }

    #[test]
    fn the_idle_threshold_is_inclusive_and_bursts_can_be_off() {
        let mut t = FocusTracker::new(true, 5_000);
        t.on_focus(Some(100), 0);
        t.on_focus(Some(200), 1_000); // 100 loses the focus at 1000
        assert_eq!(t.on_focus(Some(100), 5_999), Decision::Foreground { pid: 100, burst: false }, "4999 ms idle");
        // 200 lost it at 5999; 5000 ms later exactly: a burst.
        assert_eq!(t.on_focus(Some(200), 10_999), Decision::Foreground { pid: 200, burst: true });
        let mut off = FocusTracker::new(false, 0);
        assert_eq!(off.on_focus(Some(100), 0), Decision::Foreground { pid: 100, burst: false });
        off.forget(100);
        assert_eq!(off.current(), None);
        assert_eq!(off.on_focus(Some(100), 1), Decision::Foreground { pid: 100, burst: false }, "forgotten: new again");
    }

    #[test]
    fn the_tracker_remembers_a_bounded_number_of_apps() {
        let mut t = FocusTracker::new(true, 1_000_000);
        for pid in 2..(MAX_REMEMBERED as i32 + 10) {
            t.on_focus(Some(pid), pid as u64);
        }
        assert!(t.left_at.len() <= MAX_REMEMBERED);
        // The oldest were forgotten: pid 2 counts as never focused (burst), a recent one not.
        assert_eq!(t.on_focus(Some(2), 1_000_000), Decision::Foreground { pid: 2, burst: true });
        let recent = MAX_REMEMBERED as i32;
        assert_eq!(t.on_focus(Some(recent), 1_000_001), Decision::Foreground { pid: recent, burst: false });
    }

    /// A fake X server: the active window and each window's properties.
    struct Fake {
        active: Option<u32>,
        wm_pid: BTreeMap<u32, u32>,
        xres: Result<BTreeMap<u32, u32>, String>,
    }

    impl WindowSource for Fake {
        fn active_window(&self) -> Result<Option<u32>, String> {
            Ok(self.active)
        }
        fn net_wm_pid(&self, w: u32) -> Result<Option<u32>, String> {
            Ok(self.wm_pid.get(&w).copied())
        }
        fn xres_pid(&self, w: u32) -> Result<Option<u32>, String> {
            self.xres.as_ref().map(|m| m.get(&w).copied()).map_err(Clone::clone)
        }
    }

    #[test]
    fn the_pid_comes_from_net_wm_pid_else_from_xres() {
        let mut f = Fake { active: Some(0x40_0001), wm_pid: [(0x40_0001, 4321)].into(), xres: Ok([(0x40_0001, 9)].into()) };
        assert_eq!(
            resolve(&f).unwrap(),
            FocusChange { window: 0x40_0001, pid: Some(4321), via: "_NET_WM_PID".into(), initial: false }
        );
        f.wm_pid.clear();
        assert_eq!(resolve(&f).unwrap().pid, Some(9));
        assert_eq!(resolve(&f).unwrap().via, "XRes");
        f.xres = Ok(Default::default());
        let c = resolve(&f).unwrap();
        assert_eq!((c.pid, c.via.contains("XRes does not know")), (None, true), "{c:?}");
        f.xres = Err("the X server has no XRes 1.2".into());
        assert!(resolve(&f).unwrap().via.contains("no XRes"));
        // A client claiming pid 1 or 0 names nobody; nor does a root without the property.
        f.wm_pid = [(0x40_0001, 1)].into();
        f.xres = Ok([(0x40_0001, 0)].into());
        assert_eq!(resolve(&f).unwrap().pid, None);
        f.active = None;
        assert_eq!(resolve(&f).unwrap(), FocusChange { window: 0, pid: None, via: "no active window".into(), initial: false });
        f.active = Some(0);
        assert_eq!(resolve(&f).unwrap().window, 0);
        // A pid beyond i32 is not a pid.
        f.active = Some(7);
        f.wm_pid = [(7, u32::MAX)].into();
        f.xres = Ok(Default::default());
        assert_eq!(resolve(&f).unwrap().pid, None);
    }
}
