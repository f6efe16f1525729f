//! I/O priority classes (`ioprio_set(2)`): per thread, inherited by threads and children
//! created afterwards. Honoured by BFQ and mq-deadline.

use crate::error::{Error, Result};

/// An I/O priority: class and level (0 = highest .. 7), as `ionice` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IoPrio {
    /// 0 none (follows the CPU nice value), 1 real time, 2 best effort, 3 idle.
    pub class: u8,
    pub level: u8,
}

impl IoPrio {
    pub const IDLE: IoPrio = IoPrio { class: 3, level: 0 };

    fn encode(self) -> i32 {
        ((self.class as i32) << 13) | (self.level as i32 & 0x7)
    }
    fn decode(v: i32) -> Self {
        IoPrio { class: ((v >> 13) & 0x7) as u8, level: (v & 0xff) as u8 }
    }
}

const IOPRIO_WHO_PROCESS: libc::c_long = 1;

/// The I/O priority of thread `tid` (0: the calling thread).
pub fn get(tid: i32) -> Result<IoPrio> {
    // SAFETY: plain syscall with integer arguments.
    let r = unsafe { libc::syscall(libc::SYS_ioprio_get, IOPRIO_WHO_PROCESS, tid as libc::c_long) };
    if r < 0 {
        return Err(Error::Syscall { call: "ioprio_get", who: tid as i64, source: std::io::Error::last_os_error() });
    }
    Ok(IoPrio::decode(r as i32))
}

/// Sets the I/O priority of thread `tid` (0: the calling thread).
pub fn set(tid: i32, prio: IoPrio) -> Result<()> {
    // SAFETY: plain syscall with integer arguments.
    let r =
        unsafe { libc::syscall(libc::SYS_ioprio_set, IOPRIO_WHO_PROCESS, tid as libc::c_long, prio.encode() as libc::c_long) };
    if r < 0 {
        return Err(Error::Syscall { call: "ioprio_set", who: tid as i64, source: std::io::Error::last_os_error() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_round_trips() {
        for p in [IoPrio::IDLE, IoPrio { class: 2, level: 4 }, IoPrio { class: 0, level: 0 }] {
            assert_eq!(IoPrio::decode(p.encode()), p);
        }
    }

    #[test]
    fn set_own_thread_to_idle_and_back() {
        // Runs in its own thread so the test harness's other threads keep their priority.
        std::thread::spawn(|| {
            let before = get(0).unwrap();
            set(0, IoPrio::IDLE).unwrap();
            assert_eq!(get(0).unwrap(), IoPrio::IDLE);
            set(0, before).unwrap();
            assert_eq!(get(0).unwrap(), before);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn unknown_thread_is_not_found() {
        assert!(get(i32::MAX - 1).unwrap_err().is_not_found());
    }
}
