//! The agent in the simulator and the daemon classify the same process tree the same way
//! (issue 29): the simulator's `agent` policy builds its process list from a scenario; that
//! tree is written as a fake `/proc` and cgroup v2 hierarchy, the real daemon
//! (`forefront_agent::daemon::Agent`) is started on it with the same configuration, told the
//! same scope (`scope` requests, as `forefront bench` tells it its workers) and foreground
//! (`fg PID`), and its classes must equal the simulator's, process by process.

use std::collections::BTreeMap;
use std::path::Path;

use forefront_agent::config::{AgentSection, Config};
use forefront_agent::daemon::{Agent, Peer};
use forefront_agent::proto::Request;
use forefront_policy::Class;
use forefront_sim::{agent_view, RunConfig};

/// A cgroup v2 system holding `procs` (pid, ppid, uid, comm, cgroup) and the agent's groups.
fn fake_root(r: &Path, procs: &[forefront_policy::classify::Process]) {
    let cg = r.join("sys/fs/cgroup");
    std::fs::create_dir_all(&cg).unwrap();
    std::fs::write(cg.join("cgroup.controllers"), "cpuset cpu io memory pids").unwrap();
    std::fs::write(cg.join("cgroup.subtree_control"), "memory pids").unwrap();
    for g in ["forefront", "forefront/fg", "forefront/bg"] {
        let d = cg.join(g);
        std::fs::create_dir_all(&d).unwrap();
        for (f, v) in [
            ("cpu.weight", "100"),
            ("cpu.idle", "0"),
            ("io.bfq.weight", "default 100"),
            ("io.prio.class", "no-change"),
            ("cgroup.freeze", "0"),
            ("cgroup.procs", ""),
            ("cgroup.subtree_control", ""),
        ] {
            std::fs::write(d.join(f), v).unwrap();
        }
    }
    std::fs::create_dir_all(r.join("proc/self")).unwrap();
    std::fs::write(r.join("proc/self/mountinfo"), "30 24 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n").unwrap();
    for p in procs {
        std::fs::create_dir_all(cg.join(p.cgroup.trim_start_matches('/'))).unwrap();
        let d = r.join(format!("proc/{}", p.pid));
        std::fs::create_dir_all(d.join(format!("task/{}", p.pid))).unwrap();
        let stat =
            format!("{} ({}) S {} 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 {} 0 0\n", p.pid, p.comm, p.ppid, 5000 + p.pid);
        std::fs::write(d.join("stat"), stat).unwrap();
        std::fs::write(d.join("status"), format!("Uid:\t{0}\t{0}\t{0}\t{0}\n", p.uid)).unwrap();
        std::fs::write(d.join("cgroup"), format!("0::{}\n", p.cgroup)).unwrap();
    }
}

fn no_log(_: &str) {}

/// The daemon's classes for the simulator's tree under `cfg`.
fn daemon_classes(cfg: &Config, view: &forefront_sim::world::AgentView) -> BTreeMap<i32, Class> {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    fake_root(r, &view.processes);
    let cfg = Config {
        agent: AgentSection { root: r.into(), state: r.join("run/state.json"), socket: r.join("run/s"), ..Default::default() },
        ..cfg.clone()
    };
    let mut agent = Agent::start(cfg, None, no_log).expect("the daemon starts on the fake tree");
    let peer = Peer { pid: 999_999, uid: 0, gid: 0 };
    for &pid in &view.runtime_trees {
        let r = agent.handle(Request::Scope { pid: Some(pid), uid: None, cgroup: None, remove: false }, peer);
        assert!(r.ok, "scope {pid}: {:?}", r.error);
        agent.after_reply();
    }
    for &pid in &view.foreground {
        let r = agent.handle(Request::Fg { pid: Some(pid), uid: None, cgroup: None, burst: false }, peer);
        assert!(r.ok, "fg {pid}: {:?}", r.error);
        agent.after_reply();
    }
    let status = agent.status();
    agent.shutdown();
    let mut out = BTreeMap::new();
    for (name, class) in
        [("foreground", Class::Foreground), ("interactive", Class::Interactive), ("background", Class::Background)]
    {
        for m in status["classes"][name].as_array().cloned().unwrap_or_default() {
            out.insert(m["pid"].as_i64().unwrap() as i32, class);
        }
    }
    out
}

#[test]
fn the_simulators_agent_and_the_daemon_classify_the_same_tree_alike() {
    let mut interactive = Config::default();
    // The launcher (a system service) is in scope by its group and an interactive helper by its
    // name; one background template is named interactive too.
    interactive.scope.cgroups = vec!["/launcher".into()];
    interactive.scope.interactive = vec!["launcher".into()];
    let mut by_uid = Config::default();
    by_uid.scope.uids = vec![10_000];
    for (what, cfg) in [("default", Config::default()), ("interactive", interactive), ("by uid", by_uid)] {
        let mut run = RunConfig::builtin("launch-update", "agent", Some(3), 1).unwrap();
        run.policy.agent = Some(Box::new(cfg.clone()));
        let view = agent_view(&run).unwrap().expect("the agent policy has a view");
        assert!(view.classes.values().any(|c| *c == Class::Background), "{what}: the updaters are background");
        assert!(view.classes.values().any(|c| *c == Class::Foreground), "{what}: the gallery is foreground");
        if what == "interactive" {
            assert!(view.classes.values().any(|c| *c == Class::Interactive), "{what}: the launcher is an interactive helper");
        }
        let daemon = daemon_classes(&cfg, &view);
        assert_eq!(view.classes, daemon, "{what}: simulator (left) and daemon (right) differ on {:?}", view.processes);
    }
}
