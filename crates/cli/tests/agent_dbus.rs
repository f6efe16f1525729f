//! The agent's D-Bus interface against a private `dbus-daemon` configured like the system bus
//! (method calls denied unless a policy allows them) with the policy `forefront agent
//! dbus-policy` writes: root's calls work; `nobody`'s are refused, by the bus for
//! `SetForeground` and, for a `Status` call an extra policy line lets through the bus, by the
//! agent itself. The Unix socket keeps working beside it.
//!
//! Needs root (to run the client as `nobody` with `setpriv`), `dbus-daemon` and `dbus-send`;
//! elsewhere it prints `SKIP: ...` and passes. The agent runs with every kernel action off (it
//! only names the foreground), so no cgroup is touched; every process started here is killed
//! by pid in `Drop`.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_forefront");

fn on_path(prog: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(prog).is_file()))
}

struct Procs(Vec<Child>);

impl Drop for Procs {
    fn drop(&mut self) {
        for c in self.0.iter_mut().rev() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < Duration::from_secs(10), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn dbus_calls_work_for_an_allowed_uid_and_are_refused_for_another() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("SKIP: dbus_calls_work_for_an_allowed_uid_and_are_refused_for_another: not root");
        return;
    }
    let missing: Vec<&str> = ["dbus-daemon", "dbus-send", "setpriv"].into_iter().filter(|p| !on_path(p)).collect();
    if !missing.is_empty() {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr().lock(),
            "SKIP: dbus_calls_work_for_an_allowed_uid_and_are_refused_for_another: missing {} (apt-get install dbus-daemon dbus-bin util-linux)",
            missing.join(", ")
        );
        return;
    }
    let dir = tempfile::Builder::new().prefix("ff-dbus").tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let d = dir.path();
    let policy = Command::new(BIN).args(["agent", "dbus-policy", "--config", "/dev/null/none"]).output().unwrap();
    assert!(!policy.status.success(), "a missing config is an error");
    // The default config's policy (allow_uids = [0]), as the package installs it.
    let empty = d.join("empty.toml");
    std::fs::write(&empty, "").unwrap();
    let policy = Command::new(BIN).args(["agent", "dbus-policy", "--config"]).arg(&empty).output().unwrap();
    assert!(policy.status.success(), "{}", String::from_utf8_lossy(&policy.stderr));
    std::fs::write(d.join("forefront.conf"), &policy.stdout).unwrap();
    let bus = d.join("bus");
    let address = format!("unix:path={}", bus.display());
    // The system bus's default policy (Debian's system.conf): no names owned, no method calls,
    // but what a policy file allows. One extra line lets `nobody` send Status through the bus,
    // so that the agent's own check is exercised as well; it names the uid by number, as the
    // policies `forefront agent dbus-policy` writes do.
    std::fs::write(
        d.join("bus.conf"),
        format!(
            r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <listen>{address}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
  </policy>
  <include>{}</include>
  <policy user="65534">
    <allow send_destination="org.forefront.Agent1" send_interface="org.forefront.Agent1" send_member="Status"/>
  </policy>
</busconfig>
"#,
            d.join("forefront.conf").display()
        ),
    )
    .unwrap();
    let mut procs = Procs(vec![]);
    let daemon = Command::new("dbus-daemon")
        .arg(format!("--config-file={}", d.join("bus.conf").display()))
        .arg("--nofork")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(d.join("bus.log")).unwrap())
        .spawn()
        .unwrap();
    procs.0.push(daemon);
    wait_for("the bus socket", || bus.exists());

    let sleeper = Command::new("sleep").arg("600").spawn().unwrap();
    let app = sleeper.id() as i32;
    procs.0.push(sleeper);
    let socket = d.join("agent.sock");
    let cfg = d.join("agent.toml");
    std::fs::write(
        &cfg,
        format!(
            "[agent]\nsocket = {socket:?}\nstate = {:?}\ngroup = \"ff-test-dbus-{}\"\n[cpu]\nenabled = false\n[io]\nenabled = false\n\
             [pause]\nenabled = false\n[focus]\nx11 = \"off\"\n[dbus]\nenabled = \"on\"\naddress = {address:?}\n",
            d.join("state/state.json"),
            std::process::id()
        ),
    )
    .unwrap();
    let log = d.join("agent.log");
    let agent = Command::new(BIN)
        .args(["agent", "run", "--config"])
        .arg(&cfg)
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    procs.0.push(agent);
    let agent_log = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_for("the agent on the bus", || agent_log().contains("dbus: serving") || agent_log().contains("Error"));
    assert!(agent_log().contains("dbus: serving org.forefront.Agent1"), "{}", agent_log());

    let send = |as_nobody: bool, args: &[&str]| -> Output {
        let mut c = if as_nobody {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "dbus-send"]);
            c
        } else {
            Command::new("dbus-send")
        };
        c.arg(format!("--bus={address}"))
            .args(["--print-reply", "--reply-timeout=5000", "--dest=org.forefront.Agent1", "/org/forefront/Agent1"])
            .args(args)
            .output()
            .unwrap()
    };
    let text = |o: &Output| format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let set_fg = ["org.forefront.Agent1.SetForeground".to_string(), format!("int32:{app}"), "boolean:false".into()];
    let set_fg: Vec<&str> = set_fg.iter().map(String::as_str).collect();

    // root (allowed by the policy and by allow_uids = [0]).
    let o = send(false, &set_fg);
    assert!(o.status.success(), "{}\nagent log:\n{}", text(&o), agent_log());
    assert!(text(&o).contains(&format!("foreground is pid {app}")), "{}", text(&o));
    let o = send(false, &["org.forefront.Agent1.Status"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains(&format!("\\\"pids\\\":[{app}]")) || text(&o).contains(&format!("\"pids\":[{app}]")),
        "{}",
        text(&o)
    );
    let o = send(false, &["org.forefront.Agent1.BurstEnd"]);
    assert!(o.status.success() && text(&o).contains("no pause in progress"), "{}", text(&o));
    // A bad argument gets the parser's error, not a crash.
    let o = send(false, &["org.forefront.Agent1.SetForeground", "int32:1", "boolean:false"]);
    assert!(!o.status.success() && text(&o).contains("InvalidArgs"), "{}", text(&o));

    // nobody: the bus refuses SetForeground; the agent refuses the Status the bus lets through.
    let o = send(true, &set_fg);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("AccessDenied") && text(&o).contains("Rejected send message"), "{}", text(&o));
    let o = send(true, &["org.forefront.Agent1.Status"]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("AccessDenied") && text(&o).contains("permission denied: uid 65534"), "{}", text(&o));
    assert!(agent_log().contains("dbus: permission denied: uid 65534"), "{}", agent_log());

    // The Unix socket works beside the bus, and the foreground is still root's choice.
    let o = Command::new(BIN).args(["agent", "status", "--format", "json", "--socket"]).arg(&socket).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let st: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(st["foreground"]["pids"][0], app);
    assert!(Path::new(&socket).exists());
}
