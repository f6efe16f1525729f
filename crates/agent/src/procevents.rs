//! Exec notifications from the kernel's process-events connector (`cn_proc`, netlink), so a
//! foreground rule fires the moment a matching program starts instead of at the next rescan.
//!
//! Protocol (`linux/connector.h`, `linux/cn_proc.h`): a `NETLINK_CONNECTOR` datagram socket
//! bound to multicast group `CN_IDX_PROC` receives, once `PROC_CN_MCAST_LISTEN` is sent, one
//! message per process event: `nlmsghdr` (16 bytes), `cn_msg` (20 bytes: idx, val, seq, ack,
//! len, flags), then `proc_event` (`what`, `cpu`, `timestamp_ns`, and for `PROC_EVENT_EXEC` the
//! pid and tgid). Needs `CAP_NET_ADMIN` (root); without it [`listen`] fails and the agent falls
//! back to its rescans.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const NETLINK_CONNECTOR: libc::c_int = 11;
const CN_IDX_PROC: u32 = 1;
const CN_VAL_PROC: u32 = 1;
const PROC_CN_MCAST_LISTEN: u32 = 1;
const PROC_EVENT_EXEC: u32 = 2;
const NLMSG_HDR: usize = 16;
const CN_MSG_HDR: usize = 20;

/// A subscribed connector socket.
pub struct ExecEvents {
    fd: OwnedFd,
}

/// Subscribes to process events.
pub fn listen() -> io::Result<ExecEvents> {
    // SAFETY: plain socket(2); the fd is owned below.
    let raw = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, NETLINK_CONNECTOR) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a fresh descriptor nobody else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: zeroed sockaddr_nl is valid; fields set below.
    let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    addr.nl_groups = CN_IDX_PROC;
    addr.nl_pid = 0; // the kernel assigns a unique port
                     // SAFETY: addr is a valid sockaddr_nl of the given length.
    let r = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            &addr as *const libc::sockaddr_nl as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_nl>() as u32,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut msg = Vec::with_capacity(NLMSG_HDR + CN_MSG_HDR + 4);
    let total = (NLMSG_HDR + CN_MSG_HDR + 4) as u32;
    msg.extend_from_slice(&total.to_ne_bytes()); // nlmsg_len
    msg.extend_from_slice(&(libc::NLMSG_DONE as u16).to_ne_bytes()); // nlmsg_type
    msg.extend_from_slice(&0u16.to_ne_bytes()); // nlmsg_flags
    msg.extend_from_slice(&0u32.to_ne_bytes()); // nlmsg_seq
    msg.extend_from_slice(&std::process::id().to_ne_bytes()); // nlmsg_pid
    msg.extend_from_slice(&CN_IDX_PROC.to_ne_bytes());
    msg.extend_from_slice(&CN_VAL_PROC.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes()); // seq
    msg.extend_from_slice(&0u32.to_ne_bytes()); // ack
    msg.extend_from_slice(&4u16.to_ne_bytes()); // len
    msg.extend_from_slice(&0u16.to_ne_bytes()); // flags
    msg.extend_from_slice(&PROC_CN_MCAST_LISTEN.to_ne_bytes());
    // SAFETY: msg is a valid buffer of its length.
    let n = unsafe { libc::send(fd.as_raw_fd(), msg.as_ptr().cast(), msg.len(), 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(ExecEvents { fd })
}

impl ExecEvents {
    /// Blocks until the next datagram; returns the process ids (tgids) that exec'd in it
    /// (usually one, none for other events).
    pub fn next(&self) -> io::Result<Vec<i32>> {
        let mut buf = [0u8; 4096];
        // SAFETY: buf is valid for its length.
        let n = unsafe { libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(parse(&buf[..n as usize]))
    }
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4).map(|s| u32::from_ne_bytes(s.try_into().expect("4 bytes")))
}

/// The exec'd tgids in one datagram (possibly several netlink messages).
fn parse(mut b: &[u8]) -> Vec<i32> {
    let mut out = vec![];
    while b.len() >= NLMSG_HDR {
        let Some(len) = u32_at(b, 0).map(|l| l as usize) else { break };
        if len < NLMSG_HDR || len > b.len() {
            break;
        }
        let m = &b[..len];
        // proc_event after the two headers: what (4), cpu (4), timestamp (8), then exec's
        // process_pid (4), process_tgid (4).
        let ev = NLMSG_HDR + CN_MSG_HDR;
        if u32_at(m, ev) == Some(PROC_EVENT_EXEC) {
            if let Some(tgid) = u32_at(m, ev + 20) {
                out.push(tgid as i32);
            }
        }
        // Messages are 4-byte aligned.
        let step = (len + 3) & !3;
        b = b.get(step..).unwrap_or(&[]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(what: u32, pid: i32, tgid: i32) -> Vec<u8> {
        let mut m = vec![];
        let len = (NLMSG_HDR + CN_MSG_HDR + 24) as u32;
        m.extend_from_slice(&len.to_ne_bytes());
        m.extend_from_slice(&[0u8; 12]);
        m.extend_from_slice(&[0u8; CN_MSG_HDR]);
        m.extend_from_slice(&what.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        m.extend_from_slice(&0u64.to_ne_bytes());
        m.extend_from_slice(&pid.to_ne_bytes());
        m.extend_from_slice(&tgid.to_ne_bytes());
        m
    }

    #[test]
    fn exec_events_are_parsed_and_others_skipped() {
        let mut d = message(PROC_EVENT_EXEC, 11, 10);
        d.extend(message(1, 12, 12)); // fork
        d.extend(message(PROC_EVENT_EXEC, 13, 13));
        assert_eq!(parse(&d), [10, 13]);
        assert_eq!(parse(&d[..5]), Vec::<i32>::new(), "truncated: nothing, no panic");
        let mut bad = message(PROC_EVENT_EXEC, 1, 1);
        bad[0..4].copy_from_slice(&9999u32.to_ne_bytes());
        assert!(parse(&bad).is_empty(), "a length past the datagram stops the parse");
    }

    #[test]
    fn the_kernel_reports_an_exec() {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("SKIP: the process-events connector needs root (CAP_NET_ADMIN)");
            return;
        }
        let ev = match listen() {
            Ok(e) => e,
            Err(e) => {
                eprintln!("SKIP: no process-events connector here: {e}");
                return;
            }
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || loop {
            match ev.next() {
                Ok(pids) => {
                    for p in pids {
                        if tx.send(p).is_err() {
                            return;
                        }
                    }
                }
                Err(_) => return,
            }
        });
        let mut child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        let pid = child.id() as i32;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
        let mut seen = false;
        while std::time::Instant::now() < deadline {
            if let Ok(p) = rx.recv_timeout(std::time::Duration::from_millis(100)) {
                if p == pid {
                    seen = true;
                    break;
                }
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(seen, "no exec event for pid {pid}");
    }
}
