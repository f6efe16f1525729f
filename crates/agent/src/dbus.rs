//! The agent on D-Bus: `org.forefront.Agent1` at `/org/forefront/Agent1` on the system bus,
//! beside the Unix socket (which stays: a launcher needs no bus).
//!
//! | method | arguments | reply |
//! |---|---|---|
//! | `SetForeground` | `pid: i`, `burst: b` | `s`: what the agent did |
//! | `BurstEnd` | | `s` |
//! | `Status` | | `s`: the JSON object `forefront agent status --format json` prints |
//!
//! Each call becomes the socket's request ([`crate::proto::Request`]), checked by the same
//! parser, and reaches the loop as the same [`Event::Request`]. Who may call is decided twice:
//! by the bus policy ([`policy`] writes it from `[control]`: `packaging/dbus/`) and by the
//! agent itself, from the caller's credentials as the bus daemon reports them
//! (`GetConnectionCredentials`): a uid in `control.allow_uids`, or any of its groups in
//! `control.allow_gids` (as the policy's `group=` matches supplementary groups too).
//!
//! A compositor on Wayland (GNOME Shell, KWin) calls `SetForeground` with the focused window's
//! pid; docs/agent.md shows the few lines.

use std::sync::mpsc;
use std::time::Duration;

use crate::config::ControlSection;
use crate::daemon::{AgentError, Event, Peer};
use crate::proto::{self, Request, Response};

/// The bus name the agent owns.
pub const NAME: &str = "org.forefront.Agent1";
/// The object path of its interface.
pub const PATH: &str = "/org/forefront/Agent1";

/// The longest the agent's loop may take to answer one call.
const REPLY_DEADLINE: Duration = Duration::from_secs(15);

struct Agent1 {
    allow: ControlSection,
    tx: mpsc::Sender<Event>,
    log: fn(&str),
}

impl Agent1 {
    /// The caller's credentials from the bus daemon, checked against `[control]`.
    async fn peer(&self, conn: &zbus::Connection, hdr: &zbus::message::Header<'_>) -> zbus::fdo::Result<Peer> {
        let sender = hdr.sender().ok_or_else(|| zbus::fdo::Error::AccessDenied("a call without a sender".into()))?;
        let bus = zbus::fdo::DBusProxy::new(conn).await?;
        let c = bus.get_connection_credentials(sender.clone().into()).await?;
        let (Some(uid), Some(pid)) = (c.unix_user_id(), c.process_id()) else {
            return Err(zbus::fdo::Error::AccessDenied("the bus did not report the caller's uid and pid".into()));
        };
        let groups = c.unix_group_ids().cloned().unwrap_or_default();
        let gid =
            groups.iter().copied().find(|g| self.allow.allow_gids.contains(g)).or(groups.first().copied()).unwrap_or(u32::MAX);
        let peer = Peer { pid: pid as i32, uid, gid };
        if !allowed(&self.allow, uid, &groups) {
            let msg = format!("permission denied: uid {uid} (pid {pid}) is not allowed (control.allow_uids, allow_gids)");
            (self.log)(&format!("dbus: {msg}"));
            return Err(zbus::fdo::Error::AccessDenied(msg));
        }
        Ok(peer)
    }

    /// Hands `req` to the loop as the socket does and waits for its reply.
    fn ask(&self, req: Request, peer: Peer) -> zbus::fdo::Result<Response> {
        // The same checks as a socket request line.
        let line = serde_json::to_vec(&req).expect("a request serialises");
        let req = proto::parse(&line).map_err(zbus::fdo::Error::InvalidArgs)?;
        let (reply, rx) = mpsc::channel();
        self.tx
            .send(Event::Request { req, peer, reply })
            .map_err(|_| zbus::fdo::Error::Failed("the agent is stopping".into()))?;
        // Blocks this bus connection's executor for the loop's answer (milliseconds): the agent
        // has no other async work, and the loop never waits on the bus.
        let r = rx.recv_timeout(REPLY_DEADLINE).map_err(|_| zbus::fdo::Error::Failed("the agent did not answer".into()))?;
        match r.ok {
            true => Ok(r),
            false => Err(zbus::fdo::Error::Failed(r.error.unwrap_or_default())),
        }
    }
}

/// Whether a caller may use the agent: its uid in `allow_uids`, or one of its groups in
/// `allow_gids`.
pub fn allowed(allow: &ControlSection, uid: u32, groups: &[u32]) -> bool {
    allow.allow_uids.contains(&uid) || groups.iter().any(|g| allow.allow_gids.contains(g))
}

#[zbus::interface(name = "org.forefront.Agent1")]
impl Agent1 {
    /// Makes `pid` and its descendants the foreground; with `burst`, pauses the background.
    async fn set_foreground(
        &self,
        #[zbus(header)] hdr: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
        pid: i32,
        burst: bool,
    ) -> zbus::fdo::Result<String> {
        let peer = self.peer(conn, &hdr).await?;
        let r = self.ask(Request::Fg { pid: Some(pid), uid: None, cgroup: None, burst }, peer)?;
        Ok(r.message.unwrap_or_default())
    }

    /// Ends the pause in progress.
    async fn burst_end(
        &self,
        #[zbus(header)] hdr: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> zbus::fdo::Result<String> {
        let peer = self.peer(conn, &hdr).await?;
        Ok(self.ask(Request::BurstEnd {}, peer)?.message.unwrap_or_default())
    }

    /// The agent's status as JSON.
    async fn status(
        &self,
        #[zbus(header)] hdr: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> zbus::fdo::Result<String> {
        let peer = self.peer(conn, &hdr).await?;
        Ok(self.ask(Request::Status {}, peer)?.status.map(|s| s.to_string()).unwrap_or_default())
    }
}

/// Connects to the bus (`address`: empty for the system bus), owns [`NAME`] and serves the
/// interface; calls reach `tx` as [`Event::Request`]. The interface lives as long as the
/// returned connection.
pub fn serve(
    address: &str,
    allow: ControlSection,
    tx: mpsc::Sender<Event>,
    log: fn(&str),
) -> Result<zbus::blocking::Connection, AgentError> {
    let shown = if address.is_empty() { "the system bus".to_owned() } else { address.to_owned() };
    let err = |e: zbus::Error| AgentError::Nothing(format!("D-Bus {shown}: {e}"));
    let builder = if address.is_empty() {
        zbus::blocking::connection::Builder::system().map_err(err)?
    } else {
        zbus::blocking::connection::Builder::address(address).map_err(err)?
    };
    builder.name(NAME).map_err(err)?.serve_at(PATH, Agent1 { allow, tx, log }).map_err(err)?.build().map_err(err)
}

/// The bus policy allowing what `[control]` allows: root owns [`NAME`]; the listed uids and
/// groups (and root, who owns it) may call it; everyone else is refused by the bus (and again
/// by the agent).
pub fn policy(allow: &ControlSection) -> String {
    let call = format!("    <allow send_destination=\"{NAME}\" send_interface=\"{NAME}\"/>\n");
    let mut s = String::from(
        "<?xml version=\"1.0\"?> <!--*-nxml-*-->\n\
         <!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN\"\n \
         \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n\
         <!-- The forefront agent's D-Bus interface (written by `forefront agent dbus-policy` from the\n     \
         config's [control] section: allow_uids, allow_gids). The agent checks callers again. -->\n\
         <busconfig>\n",
    );
    s.push_str(&format!(
        "  <policy user=\"root\">\n    <allow own=\"{NAME}\"/>\n{call}    <allow send_destination=\"{NAME}\" send_interface=\"org.freedesktop.DBus.Introspectable\"/>\n  </policy>\n"
    ));
    for uid in allow.allow_uids.iter().filter(|u| **u != 0) {
        s.push_str(&format!("  <policy user=\"{uid}\">\n{call}  </policy>\n"));
    }
    for gid in &allow.allow_gids {
        s.push_str(&format!("  <policy group=\"{gid}\">\n{call}  </policy>\n"));
    }
    s.push_str("</busconfig>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callers_are_allowed_by_uid_or_any_group() {
        let a = ControlSection { allow_uids: vec![0, 1000], allow_gids: vec![27] };
        assert!(allowed(&a, 0, &[]));
        assert!(allowed(&a, 1000, &[1000]));
        assert!(allowed(&a, 1001, &[1001, 27]), "a supplementary group counts, as in the bus policy");
        assert!(!allowed(&a, 65534, &[65534]));
        assert!(!allowed(&ControlSection::default(), 0, &[0]), "nothing listed: nobody");
    }

    #[test]
    fn the_policy_names_every_allowed_uid_and_group() {
        let p = policy(&ControlSection { allow_uids: vec![0, 1000], allow_gids: vec![27] });
        assert!(p.contains("<policy user=\"root\">\n    <allow own=\"org.forefront.Agent1\"/>"), "{p}");
        assert!(p.contains("<policy user=\"1000\">"), "{p}");
        assert!(p.contains("<policy group=\"27\">"), "{p}");
        assert_eq!(p.matches("<policy").count(), 3, "{p}");
        assert!(!policy(&ControlSection { allow_uids: vec![0], allow_gids: vec![] }).contains("user=\"0\""));
    }

    #[test]
    fn the_shipped_policy_is_the_default_configs() {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packaging/dbus/org.forefront.Agent1.conf");
        let shipped = std::fs::read_to_string(&p).unwrap_or_default();
        assert_eq!(
            shipped,
            policy(&crate::config::Config::default().control),
            "{} differs: regenerate it with `forefront agent dbus-policy > {}`",
            p.display(),
            p.display()
        );
    }
}
