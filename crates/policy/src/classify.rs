//! Android-like classes for processes: the foreground app (all its threads and the children it
//! forked), interactive helpers named by the user, and background: everything else in scope.

use std::collections::{BTreeMap, BTreeSet};

/// The class of a process. Processes outside the managed scope get no class at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    Foreground,
    /// Serves the foreground (compositor, input method, launcher): never paused or starved.
    Interactive,
    Background,
}

/// What one process looks like to the policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Process {
    pub pid: i32,
    pub ppid: i32,
    pub uid: u32,
    pub comm: String,
    /// Path of its group in the hierarchy used to name apps (v2, or v1 `cpu`), e.g.
    /// `/user.slice/app-firefox.scope`.
    pub cgroup: String,
}

/// Who the foreground app is, as pushed by a launcher or the user.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Foreground {
    #[default]
    None,
    /// These processes and all their descendants.
    Pids(Vec<i32>),
    /// Every process of this uid (Android: one uid per app).
    Uid(u32),
    /// Every process in this group or below it.
    Cgroup(String),
}

/// The managed scope and the helpers, from the configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rules {
    /// Processes of these uids are in scope.
    pub scope_uids: Vec<u32>,
    /// Processes in these groups (or below) are in scope.
    pub scope_cgroups: Vec<String>,
    /// These processes and their descendants are in scope.
    pub scope_trees: Vec<i32>,
    /// Processes whose `comm` is one of these are interactive helpers.
    pub interactive_comms: Vec<String>,
    /// Never classified, whatever the scope says (the agent itself, its watchdog, its parents,
    /// the peer currently talking to it). Their descendants are not excluded by this.
    pub exclude: BTreeSet<i32>,
}

fn under(path: &str, prefix: &str) -> bool {
    let prefix = prefix.trim_end_matches('/');
    prefix.is_empty() || path == prefix || path.strip_prefix(prefix).is_some_and(|rest| rest.starts_with('/'))
}

/// Whether `pid` is one of `roots` or descends from one (following `ppid` links; cycles and
/// missing parents end the walk).
fn descends(pid: i32, roots: &BTreeSet<i32>, parent: &BTreeMap<i32, i32>) -> bool {
    let mut cur = pid;
    for _ in 0..parent.len() + 1 {
        if roots.contains(&cur) {
            return true;
        }
        match parent.get(&cur) {
            Some(&p) if p != cur && p > 0 => cur = p,
            _ => return false,
        }
    }
    false
}

/// Classifies every process in scope (and the foreground app, which is managed wherever it is).
///
/// Order of precedence: excluded → none; foreground; interactive helper; background if in
/// scope. Foreground pids follow forks: descendants of a foreground pid are foreground.
pub fn classify(procs: &[Process], fg: &Foreground, rules: &Rules) -> BTreeMap<i32, Class> {
    let parent: BTreeMap<i32, i32> = procs.iter().map(|p| (p.pid, p.ppid)).collect();
    let fg_roots: BTreeSet<i32> = match fg {
        Foreground::Pids(p) => p.iter().copied().collect(),
        _ => BTreeSet::new(),
    };
    let trees: BTreeSet<i32> = rules.scope_trees.iter().copied().collect();
    let mut out = BTreeMap::new();
    for p in procs {
        if rules.exclude.contains(&p.pid) {
            continue;
        }
        let is_fg = match fg {
            Foreground::None => false,
            Foreground::Pids(_) => descends(p.pid, &fg_roots, &parent),
            Foreground::Uid(u) => p.uid == *u,
            Foreground::Cgroup(c) => under(&p.cgroup, c),
        };
        if is_fg {
            out.insert(p.pid, Class::Foreground);
            continue;
        }
        let in_scope = rules.scope_uids.contains(&p.uid)
            || rules.scope_cgroups.iter().any(|c| under(&p.cgroup, c))
            || descends(p.pid, &trees, &parent);
        if !in_scope {
            continue;
        }
        let class = if rules.interactive_comms.contains(&p.comm) { Class::Interactive } else { Class::Background };
        out.insert(p.pid, class);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: i32, ppid: i32, uid: u32, comm: &str, cgroup: &str) -> Process {
        Process { pid, ppid, uid, comm: comm.into(), cgroup: cgroup.into() }
    }

    fn world() -> Vec<Process> {
        vec![
            p(1, 0, 0, "init", "/"),
            p(100, 1, 1000, "launcher", "/user/launcher"),
            p(200, 100, 1000, "camera", "/user/app-camera"),
            p(201, 200, 1000, "camera-enc", "/user/app-camera"),
            p(202, 201, 1000, "camera-sub", "/user/app-camera"),
            p(300, 100, 1001, "updater", "/user/app-updater"),
            p(301, 300, 1001, "dl", "/user/app-updater"),
            p(400, 1, 0, "sshd", "/system"),
        ]
    }

    #[test]
    fn fg_pid_brings_its_descendants_and_the_rest_of_scope_is_bg() {
        let rules =
            Rules { scope_cgroups: vec!["/user".into()], interactive_comms: vec!["launcher".into()], ..Default::default() };
        let c = classify(&world(), &Foreground::Pids(vec![200]), &rules);
        assert_eq!(c[&200], Class::Foreground);
        assert_eq!(c[&202], Class::Foreground);
        assert_eq!(c[&100], Class::Interactive);
        assert_eq!(c[&300], Class::Background);
        assert_eq!(c[&301], Class::Background);
        assert!(!c.contains_key(&1) && !c.contains_key(&400), "out of scope stays unmanaged");
    }

    #[test]
    fn fg_by_uid_and_by_cgroup() {
        let rules = Rules { scope_uids: vec![1000, 1001], ..Default::default() };
        let c = classify(&world(), &Foreground::Uid(1001), &rules);
        assert_eq!(c[&300], Class::Foreground);
        assert_eq!(c[&200], Class::Background);
        let c = classify(&world(), &Foreground::Cgroup("/user/app-camera".into()), &rules);
        assert_eq!(c[&201], Class::Foreground);
        assert_eq!(c[&301], Class::Background);
        // a prefix of a name is not a parent group
        let c = classify(&world(), &Foreground::Cgroup("/user/app-cam".into()), &rules);
        assert_eq!(c[&201], Class::Background);
    }

    #[test]
    fn fg_outside_scope_is_still_foreground() {
        let rules = Rules { scope_trees: vec![300], ..Default::default() };
        let c = classify(&world(), &Foreground::Pids(vec![400]), &rules);
        assert_eq!(c[&400], Class::Foreground);
        assert_eq!(c[&301], Class::Background);
        assert_eq!(c.len(), 3);
    }

    #[test]
    fn excluded_pids_are_never_classified_but_their_children_are() {
        let rules = Rules { scope_trees: vec![100], exclude: [100, 300].into(), ..Default::default() };
        let c = classify(&world(), &Foreground::None, &rules);
        assert!(!c.contains_key(&100) && !c.contains_key(&300));
        assert_eq!(c[&301], Class::Background);
        assert_eq!(c[&200], Class::Background);
    }

    #[test]
    fn parent_cycles_terminate() {
        let procs = vec![p(5, 6, 0, "a", "/"), p(6, 5, 0, "b", "/")];
        let rules = Rules { scope_trees: vec![7], ..Default::default() };
        assert!(classify(&procs, &Foreground::Pids(vec![9]), &rules).is_empty());
    }

    #[test]
    fn root_cgroup_scope_takes_everything() {
        let rules = Rules { scope_cgroups: vec!["/".into()], ..Default::default() };
        assert_eq!(classify(&world(), &Foreground::None, &rules).len(), world().len());
    }
}
