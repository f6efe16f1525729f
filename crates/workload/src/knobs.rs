//! `[[knob]]`: the kernel knobs a desktop agent turns (ioprio, BFQ weight, the cgroup freezer,
//! cgroup CPU weight and `cpu.idle`, the write-back hold), set by time in a scenario — what a
//! policy does at run time, written down so that a scenario can show one mechanism alone:
//!
//! ```toml
//! [[knob]]
//! at_s = 1.0            # from this simulated time on (default 0)
//! app = "updater"       # every instance of this app (optional for the group/global knobs)
//! ioprio_class = "idle" # rt | be | idle (ioprio_set; carried on the app's requests)
//! io_weight = 100       # io.bfq.weight of the app's cgroup, 1..=1000 (BFQ)
//! frozen = true         # cgroup freezer: each task stops before its next op until thawed
//! [[knob]]
//! at_s = 1.0
//! bg_cpu_weight = 10    # cgroup v2 cpu.weight of the background group, 1..=10000
//! bg_cpu_idle = true    # cgroup v2 cpu.idle of the background group
//! hold_writeback = true # the agent's write-back hold (see the simulator's `knobs` module)
//! ```
//!
//! A field left out changes nothing; a later knob overrides an earlier one field by field.

use serde::{Deserialize, Serialize};

/// An ioprio class (`ioprio_set(2)`; `none` means the kernel's default, best effort by nice).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IoprioClass {
    None,
    Rt,
    Be,
    Idle,
}

impl IoprioClass {
    /// The kernel's number (`IOPRIO_CLASS_*`): 0 none, 1 RT, 2 BE, 3 idle.
    pub fn number(self) -> u8 {
        match self {
            IoprioClass::None => 0,
            IoprioClass::Rt => 1,
            IoprioClass::Be => 2,
            IoprioClass::Idle => 3,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KnobSpec {
    /// When it applies (s of simulated time).
    #[serde(default)]
    pub at_s: f64,
    /// The app whose tasks it applies to (per-task knobs need one).
    #[serde(default)]
    pub app: Option<String>,
    #[serde(default)]
    pub ioprio_class: Option<IoprioClass>,
    /// 0..=7 (default 4 when a class is set).
    #[serde(default)]
    pub ioprio_level: Option<u8>,
    #[serde(default)]
    pub io_weight: Option<u16>,
    #[serde(default)]
    pub frozen: Option<bool>,
    #[serde(default)]
    pub bg_cpu_weight: Option<u32>,
    #[serde(default)]
    pub bg_cpu_idle: Option<bool>,
    #[serde(default)]
    pub hold_writeback: Option<bool>,
}

impl KnobSpec {
    /// Whether it sets a per-task knob (which needs `app`).
    pub fn per_task(&self) -> bool {
        self.ioprio_class.is_some() || self.ioprio_level.is_some() || self.io_weight.is_some() || self.frozen.is_some()
    }

    /// The checks of one knob; `apps` are the scenario's app names.
    pub fn validate(&self, i: usize, apps: &[&str]) -> Result<(), String> {
        if !(0.0..=3600.0).contains(&self.at_s) {
            return Err(format!("knob[{i}].at_s: need 0..=3600 s, got {}", self.at_s));
        }
        match &self.app {
            Some(a) if !apps.contains(&a.as_str()) => {
                return Err(format!(
                    "knob[{i}].app: `{a}` is not an app of this scenario{}",
                    crate::did_you_mean(a, apps.iter().copied())
                ))
            }
            None if self.per_task() => {
                return Err(format!(
                    "knob[{i}].app: ioprio_class, ioprio_level, io_weight and frozen apply to an app's tasks: name the app"
                ))
            }
            _ => {}
        }
        if let Some(l) = self.ioprio_level.filter(|&l| l > 7) {
            return Err(format!("knob[{i}].ioprio_level must be in 0..=7, got {l}"));
        }
        if let Some(w) = self.io_weight.filter(|w| !(1..=1000).contains(w)) {
            return Err(format!("knob[{i}].io_weight must be in 1..=1000 (io.bfq.weight), got {w}"));
        }
        if let Some(w) = self.bg_cpu_weight.filter(|w| !(1..=10_000).contains(w)) {
            return Err(format!("knob[{i}].bg_cpu_weight must be in 1..=10000 (cpu.weight), got {w}"));
        }
        Ok(())
    }
}
