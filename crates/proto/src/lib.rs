//! The agent's control protocol: one JSON object per line, one request per connection.
//!
//! ```text
//! → {"cmd":"fg","pid":1234,"burst":true}     the foreground app, and a launch/switch begins
//! → {"cmd":"fg","uid":10071}                 every process of this uid is foreground
//! → {"cmd":"fg","cgroup":"/user.slice/app-x"}
//! → {"cmd":"burst_end"}                      the launch/switch is over: resume background
//! → {"cmd":"cell","name":"work"}             cell `work` is foreground, the other cells background
//! → {"cmd":"scope","pid":4321}                 manage this process and its descendants (background
//!                                              unless foreground); also "uid", "cgroup"; "remove":true undoes
//! → {"cmd":"status"}
//! ← {"ok":true,"message":"...","status":{...}}   or   {"ok":false,"error":"..."}
//! ```
//!
//! The agent (`forefront_agent`, which re-exports this crate as `forefront_agent::proto`)
//! serves it; clients send it with [`client::request`]. It is a crate of its own so that the
//! launcher helper `forefront-exec` speaks it with the agent's own types without linking the
//! agent (serde and serde_json only).
//!
//! ```no_run
//! use forefront_proto::{client, Request, DEFAULT_SOCKET};
//! // In a launcher: the app with pid 1234 is starting.
//! let r = client::request(DEFAULT_SOCKET.as_ref(), &Request::Fg { pid: Some(1234), uid: None, cgroup: None, burst: true })?;
//! assert!(r.ok);
//! # Ok::<(), forefront_proto::client::ClientError>(())
//! ```

pub mod client;

use serde::{Deserialize, Serialize};

/// The agent's control socket when its config does not name another (`agent.socket`).
pub const DEFAULT_SOCKET: &str = "/run/forefront/agent.sock";

/// Longest request line accepted (bytes, newline excluded).
pub const MAX_REQUEST: usize = 4096;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    Fg {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pid: Option<i32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        uid: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cgroup: Option<String>,
        #[serde(default)]
        burst: bool,
    },
    BurstEnd {},
    Status {},
    /// Add to (or, with `remove`, take out of) the processes the agent manages, at run time:
    /// a process tree, a uid or a cgroup, on top of the config's `[scope]`. A managed process
    /// that is not foreground is background.
    Scope {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pid: Option<i32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        uid: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cgroup: Option<String>,
        #[serde(default)]
        remove: bool,
    },
    /// Make cell `name` (`[cells]` in the config) foreground: its processes FG, every other
    /// cell's BG; with `burst`, pause the background as for `fg`.
    Cell {
        name: String,
        #[serde(default)]
        burst: bool,
    },
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<serde_json::Value>,
}

impl Response {
    pub fn ok(message: impl Into<String>) -> Self {
        Response { ok: true, message: Some(message.into()), ..Default::default() }
    }
    pub fn err(error: impl Into<String>) -> Self {
        Response { ok: false, error: Some(error.into()), ..Default::default() }
    }
}

/// Longest cell name accepted (bytes).
pub const MAX_NAME: usize = 64;

/// Longest cgroup path accepted in a request or the config (bytes).
pub const MAX_CGROUP_PATH: usize = 1024;

/// A group path as the agent accepts it from a client or the config: absolute in the hierarchy
/// (`/user.slice/app.scope`), at most [`MAX_CGROUP_PATH`] bytes, no NUL or other control
/// character, no empty, `.` or `..` component, and not the root group (which holds every
/// process on the machine).
pub fn check_cgroup_path(c: &str) -> Result<(), String> {
    let shown: String = c.chars().take(80).collect::<String>().escape_debug().to_string();
    if c.len() > MAX_CGROUP_PATH {
        return Err(format!("cgroup \"{shown}...\" is {} bytes long: at most {MAX_CGROUP_PATH}", c.len()));
    }
    if c.chars().any(char::is_control) {
        return Err(format!("cgroup \"{shown}\" contains a control character (NUL, newline, ...)"));
    }
    if !c.starts_with('/') {
        return Err(format!("cgroup \"{shown}\" must be an absolute path in the hierarchy (starting with '/')"));
    }
    let body = c.strip_suffix('/').unwrap_or(c);
    if body.is_empty() {
        return Err("cgroup \"/\" is the root group: every process on the machine".into());
    }
    if body[1..].split('/').any(|s| s.is_empty() || s == "." || s == "..") {
        return Err(format!("cgroup \"{shown}\" must be an absolute path without '..', '.' or empty components"));
    }
    Ok(())
}

/// Parses one request line, checking what serde cannot: exactly one way of naming the
/// foreground, a pid above 1, a group path that [`check_cgroup_path`] accepts, a cell name
/// without control characters. What needs the system (the pid exists, is not the agent's) is
/// checked by the agent (`forefront_agent::daemon::Agent::handle`).
pub fn parse(line: &[u8]) -> Result<Request, String> {
    if line.len() > MAX_REQUEST {
        return Err(format!("request longer than {MAX_REQUEST} bytes"));
    }
    let text = std::str::from_utf8(line).map_err(|_| "request is not UTF-8".to_owned())?;
    let req: Request = serde_json::from_str(text.trim()).map_err(|e| format!("bad request: {e}"))?;
    let named = match &req {
        Request::Fg { pid, uid, cgroup, .. } => Some(("fg", pid, uid, cgroup)),
        Request::Scope { pid, uid, cgroup, .. } => Some(("scope", pid, uid, cgroup)),
        _ => None,
    };
    if let Some((cmd, pid, uid, cgroup)) = named {
        let named = pid.is_some() as u8 + uid.is_some() as u8 + cgroup.is_some() as u8;
        if named != 1 {
            return Err(format!("{cmd} needs exactly one of pid, uid, cgroup"));
        }
        if let Some(p) = pid.filter(|p| *p <= 1) {
            return Err(format!("pid {p}: a pid must be above 1 (pid 1's tree is every process on the machine)"));
        }
        if *uid == Some(u32::MAX) {
            return Err("uid 4294967295 is (uid_t)-1, no user".into());
        }
        if let Some(c) = cgroup {
            check_cgroup_path(c)?;
        }
    }
    if let Request::Cell { name, .. } = &req {
        if name.is_empty() || name.len() > MAX_NAME || name.chars().any(char::is_control) {
            return Err(format!(
                "cell needs a name of 1 to {MAX_NAME} bytes without control characters, not \"{}\"",
                name.chars().take(80).collect::<String>().escape_debug()
            ));
        }
    }
    Ok(req)
}

/// What [`parse`] promises of every request it accepts; `Err` says which promise is broken.
/// (The fuzz target `fuzz/fuzz_targets/agent_request.rs` and this crate's property test check
/// it on arbitrary input.)
pub fn accepted_invariants(req: &Request) -> Result<(), String> {
    let named = match req {
        Request::Fg { pid, uid, cgroup, .. } | Request::Scope { pid, uid, cgroup, .. } => Some((pid, uid, cgroup)),
        _ => None,
    };
    if let Some((pid, uid, cgroup)) = named {
        if pid.is_some() as u8 + uid.is_some() as u8 + cgroup.is_some() as u8 != 1 {
            return Err("names the target more or less than once".into());
        }
        if pid.is_some_and(|p| p <= 1) {
            return Err(format!("pid {pid:?} <= 1"));
        }
        if let Some(c) = cgroup {
            if c.len() > MAX_CGROUP_PATH
                || !c.starts_with('/')
                || c.chars().any(char::is_control)
                || c.trim_end_matches('/').is_empty()
            {
                return Err(format!("cgroup {c:?} is too long, relative, has a control character or is the root"));
            }
            if c.split('/').skip(1).any(|s| s == ".." || s == ".") {
                return Err(format!("cgroup {c:?} has a '.' or '..' component"));
            }
        }
    }
    if let Request::Cell { name, .. } = req {
        if name.is_empty() || name.len() > MAX_NAME || name.chars().any(char::is_control) {
            return Err(format!("cell name {name:?}"));
        }
    }
    // What the agent accepted must say the same thing when sent again.
    let again = serde_json::to_string(req).map_err(|e| e.to_string())?;
    match parse(again.as_bytes()) {
        Ok(r) if &r == req => Ok(()),
        other => Err(format!("does not round-trip: {again} -> {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_requests() {
        assert_eq!(
            parse(br#"{"cmd":"fg","pid":12,"burst":true}"#).unwrap(),
            Request::Fg { pid: Some(12), uid: None, cgroup: None, burst: true }
        );
        assert_eq!(parse(b"{\"cmd\":\"burst_end\"}\n").unwrap(), Request::BurstEnd {});
        assert_eq!(
            parse(br#"{"cmd":"scope","pid":77,"remove":true}"#).unwrap(),
            Request::Scope { pid: Some(77), uid: None, cgroup: None, remove: true }
        );
        assert!(parse(br#"{"cmd":"scope","pid":7,"uid":3}"#).unwrap_err().contains("scope needs exactly one"));
        assert!(parse(br#"{"cmd":"scope","cgroup":"../x"}"#).unwrap_err().contains("absolute"));
        assert_eq!(parse(br#"{"cmd":"status"}"#).unwrap(), Request::Status {});
        let r = Request::Fg { pid: None, uid: Some(10071), cgroup: None, burst: false };
        assert_eq!(parse(serde_json::to_string(&r).unwrap().as_bytes()).unwrap(), r);
    }

    #[test]
    fn hostile_requests_are_refused_with_a_reason() {
        let cases: &[(&[u8], &str)] = &[
            (b"", "bad request"),
            (b"\xff\xfe", "not UTF-8"),
            (b"[1,2,3]", "bad request"),
            (br#"{"cmd":"reboot"}"#, "unknown variant"),
            (br#"{"cmd":"fg"}"#, "exactly one"),
            (br#"{"cmd":"fg","pid":1,"uid":2}"#, "exactly one"),
            (br#"{"cmd":"fg","pid":-5}"#, "above 1"),
            (br#"{"cmd":"fg","pid":1}"#, "above 1"),
            (br#"{"cmd":"scope","pid":0}"#, "above 1"),
            (br#"{"cmd":"scope","uid":4294967295}"#, "no user"),
            (br#"{"cmd":"fg","cgroup":"/a\u0000b"}"#, "control character"),
            (br#"{"cmd":"fg","cgroup":"/a\nforefront-agent: forged"}"#, "control character"),
            (br#"{"cmd":"scope","cgroup":"/"}"#, "root group"),
            (br#"{"cmd":"fg","cgroup":"/a//b"}"#, "empty components"),
            (br#"{"cmd":"fg","cgroup":"/a/./b"}"#, "empty components"),
            (br#"{"cmd":"cell","name":"a\nb"}"#, "control characters"),
            (br#"{"cmd":"cell","name":""}"#, "cell needs a name"),
            (br#"{"cmd":"fg","pid":99999999999}"#, "bad request"),
            (br#"{"cmd":"fg","cgroup":"../../etc"}"#, "absolute"),
            (br#"{"cmd":"fg","cgroup":"/a/../b"}"#, "absolute"),
            (br#"{"cmd":"status","evil":1}"#, "unknown field"),
        ];
        for (input, want) in cases {
            let e = parse(input).unwrap_err();
            assert!(e.contains(want), "{:?}: {e}", String::from_utf8_lossy(input));
        }
        let path = format!("/{}", "a".repeat(3000));
        let e = parse(format!(r#"{{"cmd":"fg","cgroup":"{path}"}}"#).as_bytes()).unwrap_err();
        assert!(e.contains("3001 bytes long"), "{e}");
        let long = vec![b' '; MAX_REQUEST + 1];
        assert!(parse(&long).unwrap_err().contains("longer than"));
    }

    /// The parser and validator on random input, bounded (CI fixes `PROPTEST_RNG_SEED`): raw
    /// bytes, and requests built from hostile pieces (NUL, newlines, long paths, `..`, pids
    /// around 1, huge numbers), never panic, and what is accepted keeps every promise of
    /// [`accepted_invariants`].
    mod properties {
        use super::super::*;
        use proptest::prelude::*;

        fn piece() -> impl Strategy<Value = String> {
            prop_oneof![
                Just("/".to_owned()),
                Just("..".to_owned()),
                Just(".".to_owned()),
                Just("\\u0000".to_owned()),
                Just("\\n".to_owned()),
                Just("\\u001b[2J".to_owned()),
                Just("user.slice".to_owned()),
                Just("app-x.scope".to_owned()),
                "[a-z]{1,8}".prop_map(|s| s),
                (1usize..1200).prop_map(|n| "a".repeat(n)),
            ]
        }

        fn value() -> impl Strategy<Value = String> {
            prop_oneof![
                prop::collection::vec(piece(), 0..6).prop_map(|p| format!("\"{}\"", p.concat())),
                prop::collection::vec(piece(), 0..6).prop_map(|p| format!("\"/{}\"", p.join("/"))),
                (-3i64..5).prop_map(|n| n.to_string()),
                any::<i64>().prop_map(|n| n.to_string()),
                Just("4294967295".to_owned()),
                Just("true".to_owned()),
                Just("null".to_owned()),
            ]
        }

        fn request() -> impl Strategy<Value = String> {
            let cmd = prop_oneof![Just("fg"), Just("scope"), Just("cell"), Just("status"), Just("burst_end"), Just("reboot")];
            let key =
                prop_oneof![Just("pid"), Just("uid"), Just("cgroup"), Just("name"), Just("burst"), Just("remove"), Just("evil")];
            (cmd, prop::collection::vec((key, value()), 0..4)).prop_map(|(cmd, fields)| {
                let mut s = format!("{{\"cmd\":\"{cmd}\"");
                for (k, v) in fields {
                    s.push_str(&format!(",\"{k}\":{v}"));
                }
                s.push('}');
                s
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]

            #[test]
            fn any_bytes_parse_without_panic(data in prop::collection::vec(any::<u8>(), 0..600)) {
                if let Ok(req) = parse(&data) {
                    prop_assert_eq!(accepted_invariants(&req), Ok(()));
                }
            }

            #[test]
            fn hostile_requests_are_refused_or_keep_every_promise(line in request()) {
                if let Ok(req) = parse(line.as_bytes()) {
                    prop_assert_eq!(accepted_invariants(&req), Ok(()), "{}", line);
                }
            }
        }

        #[test]
        fn the_generator_reaches_both_outcomes() {
            // A property test whose inputs are all refused would prove nothing.
            use proptest::strategy::ValueTree;
            let mut runner = proptest::test_runner::TestRunner::deterministic();
            let (mut ok, mut refused) = (0, 0);
            for _ in 0..3000 {
                let line = request().new_tree(&mut runner).unwrap().current();
                match parse(line.as_bytes()) {
                    Ok(_) => ok += 1,
                    Err(_) => refused += 1,
                }
            }
            assert!(ok > 100 && refused > 100, "{ok} accepted, {refused} refused");
        }
    }
}
