//! Declarative sweeps — policies × background apps × devices × any scenario or device field ×
//! seeds — as one implementation shared by `forefront sim sweep` / `sim merge` and the Python
//! package (`python/`): the spec, its points in their fixed order, the run configuration of a
//! point, the JSON line of its result, merging shards and the summary across seeds.
//!
//! ```toml
//! scenario = "launch-update"                 # built-in name, a scenario file, or the
//!                                            # bench's workload: "bench:launch/update"
//! policies = ["android", "fasttrack"]
//! bg_apps = [1, 2, 4]
//! devices = ["galaxy-s6-ufs"]                # optional: default the scenario's device
//! seeds = 3                                  # seeds 1..=3 (or a list: [1, 5, 9])
//! [axes]                                     # optional: dotted paths into the scenario or,
//! "phone.page_cache_mib" = [256, 768]        # with the `device.` prefix, into the device
//! "device.starvation_ms" = [100.0, 500.0]
//!
//! [[variant]]                                # optional: named sets of fields, one dimension
//! group = "net"                              # per group (default "variant"); points take one
//! name = "wifi"                              # variant of each group, named `a/b` in the point
//! [[variant]]                                # and appended to the report's scenario name
//! group = "net"
//! name = "usb"
//! set = { "phone.net_mb_s" = 25.0 }
//! ```
//!
//! `scenario = "bench:FG/BG"` is `forefront bench run --fg FG --bg BG`'s workload with the
//! bench's defaults (`forefront_workload::bench::BenchWorkload::named_scenario`) on each of
//! `devices` (required: a `forefront bench calibrate` output studies this machine's disk);
//! `bg_apps` is its number of workers.
//!
//! The `agent` policy reads the agent's own TOML (`agent_config = "FILE"`, else its defaults);
//! axes and variant fields with the `agent.` prefix set its fields (`"agent.pause.max_ms" =
//! [500, 3000]`, `"agent.io.bg_weight" = [10, 100]`), checked as the agent checks its file.
//!
//! Each result line is `{"sweep": ID, "shard": "I/N", "points": P, "index": N, "point": {...},
//! "report": {...}}`: the spec's identity ([`Spec::id`]), the shard that ran it and the sweep's
//! size (so a resume or a merge never mixes sweeps and a merge can name what is missing), the
//! point's index in the sweep's fixed order, what varies, and the run's report without its
//! wall-clock `stats` (so a file is the same bytes for the same spec, however and wherever it
//! was computed). A point whose run failed has `"error": "..."` in place of `report`.
//!
//! Lines are appended as points finish (a killed sweep keeps them) and a finished sweep's file
//! is rewritten in index order, one line per point ([`finish`]). Readers bound a line's length
//! ([`MAX_LINE_BYTES`], [`for_each_line`]).
//!
//! ```no_run
//! let spec = forefront_sweep::Spec::parse("inline", "scenario = \"launch-update\"\npolicies = [\"android\"]\nbg_apps = [1]\nseeds = 1\n").unwrap();
//! for (i, _) in spec.points().unwrap().iter().enumerate() {
//!     println!("{}", spec.run_point(i).unwrap().to_json());
//! }
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;
use std::path::Path;

use forefront_policy::Policy;
use forefront_record::run::RunReport;
use forefront_sim::RunConfig;
use forefront_workload::bench::{BenchWorkload, NAMED_PREFIX};
use serde::{Deserialize, Serialize};

/// A sweep error: its text names the file (and line or field) it concerns.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SweepError(pub String);

type Result<T> = std::result::Result<T, SweepError>;

macro_rules! fail {
    ($($t:tt)*) => { SweepError(format!($($t)*)) };
}

/// A sweep specification, and the file (or other source) it came from, for messages.
#[derive(Clone, Debug)]
pub struct Spec {
    pub file: String,
    pub body: SpecBody,
}

/// The fields of a spec file.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpecBody {
    pub scenario: String,
    pub policies: Vec<String>,
    pub bg_apps: Vec<u32>,
    #[serde(default)]
    pub devices: Vec<String>,
    pub seeds: Seeds,
    #[serde(default)]
    pub axes: BTreeMap<String, Vec<toml::Value>>,
    #[serde(default, rename = "variant", skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<Variant>,
    /// The agent's TOML for the `agent` policy's points (default: the agent's defaults, the
    /// shipped `dist/agent.toml`); a relative path is taken from the current directory. Axes and
    /// variant fields with the `agent.` prefix set fields of it (`"agent.pause.max_ms"`,
    /// `"agent.io.bg_weight"`) on those points and are ignored on the other policies' points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_config: Option<String>,
}

/// A named set of scenario (or, with `device.`, device) fields: a what-if or a configuration to
/// compare, where a cartesian `[axes]` product would not fit. Variants of one `group` are
/// alternatives; a point takes one variant of every group.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    #[serde(default = "default_group")]
    pub group: String,
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Dotted path → value, as in `[axes]` (one value each); applied before the axes.
    #[serde(default)]
    pub set: BTreeMap<String, toml::Value>,
}

fn default_group() -> String {
    "variant".into()
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Seeds {
    /// Seeds 1..=N.
    Count(u64),
    List(Vec<u64>),
}

/// What varies at one point of the sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub policy: String,
    pub bg_apps: u32,
    pub device: String,
    pub seed: u64,
    /// Axis path → value (JSON), in path order.
    pub axes: BTreeMap<String, serde_json::Value>,
    /// The point's variants, one per group in the order groups first appear, joined by `/`
    /// (absent when the spec has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

/// One result line: which sweep and shard wrote it, the point's index in the sweep's order, the
/// point, and either the run's report without `stats` or the error that ended the run.
///
/// `sweep` and `points` identify the spec ([`Spec::id`]) so that a resume or a merge never mixes
/// two sweeps; `shard` (`I/N`) says which shard ran it, so a merge can tell a missing shard from
/// missing points. A merged file's lines say `0/1`, as one machine's would.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Line {
    pub sweep: String,
    pub shard: String,
    pub points: usize,
    pub index: usize,
    pub point: Point,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<serde_json::Value>,
    /// Why the point has no report (the run panicked or failed); a resume runs it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The largest sweep spec read (specs are written by hand).
pub const MAX_SPEC_BYTES: u64 = 1 << 20;

/// The longest line a sweep's JSON Lines reader accepts (a run's report is tens of KiB; a
/// longer line is not one of ours, e.g. `/dev/zero` or `/dev/full` given as a file).
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// Where a line was written: the spec's identity, the shard that ran it, the sweep's size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    pub sweep: String,
    pub shard: (usize, usize),
    pub points: usize,
}

impl Line {
    /// The line of a finished run: its report less the wall-clock `stats`.
    pub fn new(origin: &Origin, index: usize, point: Point, report: &RunReport) -> Line {
        let mut report = serde_json::to_value(report).expect("reports serialise");
        report.as_object_mut().expect("a report is an object").remove("stats");
        Line::with(origin, index, point, Some(report), None)
    }

    /// The line of a run that ended without a report.
    pub fn failed(origin: &Origin, index: usize, point: Point, error: String) -> Line {
        Line::with(origin, index, point, None, Some(error))
    }

    fn with(o: &Origin, index: usize, point: Point, report: Option<serde_json::Value>, error: Option<String>) -> Line {
        let shard = format!("{}/{}", o.shard.0, o.shard.1);
        Line { sweep: o.sweep.clone(), shard, points: o.points, index, point, report, error }
    }

    /// The line as written to a JSON Lines file (without the newline).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("lines serialise")
    }

    /// Parse one line of a JSON Lines file; `file` and `line` (1-based) locate it in messages.
    pub fn parse(file: &str, line: usize, text: &str) -> Result<Line> {
        let l: Line = serde_json::from_str(text).map_err(|e| fail!("{file}:{line}: not a sweep line: {}", json_message(&e)))?;
        let ok = match (&l.report, &l.error) {
            (Some(r), None) => r.is_object(),
            (None, Some(_)) => true,
            _ => false,
        };
        if !ok {
            return Err(fail!("{file}:{line}: not a sweep line: it needs a `report` object or an `error`, not both"));
        }
        parse_shard(&l.shard).map_err(|e| fail!("{file}:{line}: shard: {e}"))?;
        if l.index >= l.points {
            return Err(fail!("{file}:{line}: index {} is not below `points` ({})", l.index, l.points));
        }
        Ok(l)
    }

    /// The shard that wrote the line, as (I, N) (checked by [`Line::parse`]).
    pub fn shard(&self) -> (usize, usize) {
        parse_shard(&self.shard).unwrap_or((0, 1))
    }

    /// Whether this line holds a result (not a failure).
    pub fn ok(&self) -> bool {
        self.report.is_some()
    }
}

impl Spec {
    /// A spec from TOML text; `file` names it in messages (`file:line: ...`).
    pub fn parse(file: &str, text: &str) -> Result<Spec> {
        let body: SpecBody = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(1, |s| text[..s.start.min(text.len())].matches('\n').count() + 1);
            fail!("{file}:{line}: {}", e.message().trim())
        })?;
        Spec::checked(file, body)
    }

    /// A spec from JSON text (what the Python package passes for a dict).
    pub fn parse_json(file: &str, text: &str) -> Result<Spec> {
        let body: SpecBody = serde_json::from_str(text).map_err(|e| fail!("{file}: {}", json_message(&e)))?;
        Spec::checked(file, body)
    }

    /// A spec file.
    pub fn load(path: &Path) -> Result<Spec> {
        // A spec is a short hand-written file: a special file or one over 1 MiB is refused
        // before it is read (`/dev/zero` would otherwise grow until memory runs out).
        use std::io::Read;
        let name = path.display();
        let meta = std::fs::metadata(path).map_err(|e| fail!("{name}: {e}"))?;
        if !meta.is_file() {
            return Err(fail!("{name}: is not a regular file, not a sweep spec"));
        }
        let mut text = String::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_SPEC_BYTES + 1).read_to_string(&mut text))
            .map_err(|e| fail!("{name}: {e}"))?;
        if text.len() as u64 > MAX_SPEC_BYTES {
            return Err(fail!("{name}: larger than {} MiB, not a sweep spec", MAX_SPEC_BYTES >> 20));
        }
        Spec::parse(&path.display().to_string(), &text)
    }

    fn checked(file: &str, body: SpecBody) -> Result<Spec> {
        let ensure = |ok: bool, what: &str| if ok { Ok(()) } else { Err(fail!("{file}: {what}")) };
        ensure(!body.policies.is_empty(), "`policies` is empty")?;
        ensure(!body.bg_apps.is_empty(), "`bg_apps` is empty")?;
        for p in &body.policies {
            Policy::by_name(p).map_err(|e| fail!("{file}: policies: {e}"))?;
        }
        for (k, v) in &body.axes {
            ensure(!v.is_empty(), &format!("axes.\"{k}\" has no value"))?;
        }
        use forefront_workload::limits::{MAX_BG_APPS, MAX_SEEDS, MAX_SWEEP_POINTS};
        if let Some(bg) = body.bg_apps.iter().find(|&&b| b > MAX_BG_APPS) {
            return Err(fail!("{file}: bg_apps: {bg} is over the limit of {MAX_BG_APPS} background app instances"));
        }
        let seeds = match &body.seeds {
            Seeds::Count(0) => return Err(fail!("{file}: seeds: 0 seeds make no run (seeds = N runs seeds 1..=N)")),
            Seeds::Count(n) => *n,
            Seeds::List(v) => {
                let mut seen = BTreeSet::new();
                if let Some(dup) = v.iter().find(|s| !seen.insert(**s)) {
                    return Err(fail!(
                        "{file}: seeds: seed {dup} is listed twice (its runs would be identical, and count as independent samples)"
                    ));
                }
                ensure(!v.is_empty(), "seeds: the list is empty")?;
                v.len() as u64
            }
        };
        if seeds > MAX_SEEDS {
            return Err(fail!("{file}: seeds: {seeds} seeds are over the limit of {MAX_SEEDS}"));
        }
        // The number of points, before any is built: a product of a few lists can be 1e18.
        let groups: BTreeMap<&str, u64> = body.variants.iter().fold(BTreeMap::new(), |mut m, v| {
            *m.entry(v.group.as_str()).or_default() += 1;
            m
        });
        let n = [body.devices.len().max(1) as u64, body.policies.len() as u64, body.bg_apps.len() as u64, seeds]
            .into_iter()
            .chain(body.axes.values().map(|v| v.len() as u64))
            .chain(groups.into_values())
            .try_fold(1u64, |acc, k| acc.checked_mul(k).filter(|&n| n <= MAX_SWEEP_POINTS));
        if n.is_none() {
            return Err(fail!(
                "{file}: the sweep has more than {MAX_SWEEP_POINTS} points (devices × variants × axes × policies × bg_apps × seeds); split it into several specs"
            ));
        }
        let mut seen = BTreeSet::new();
        for v in &body.variants {
            let ok = !v.name.is_empty() && !v.name.contains('/') && !v.group.is_empty();
            ensure(ok, &format!("variant `{}` (group `{}`): names must be non-empty, without `/`", v.name, v.group))?;
            ensure(seen.insert((&v.group, &v.name)), &format!("variant `{}` is defined twice in group `{}`", v.name, v.group))?;
        }
        Ok(Spec { file: file.to_string(), body })
    }

    /// The spec's identity: the FNV-1a 64-bit hash of its canonical JSON ([`Spec::to_json`]), in
    /// hex. The same fields give the same identity whatever the file's name, layout or comments.
    pub fn id(&self) -> String {
        use std::hash::Hasher;
        let mut h = fnv::FnvHasher::default();
        h.write(self.to_json().as_bytes());
        format!("{:016x}", h.finish())
    }

    /// What the lines of shard `I/N` of this sweep carry.
    pub fn origin(&self, shard: (usize, usize)) -> Result<Origin> {
        Ok(Origin { sweep: self.id(), shard, points: self.points()?.len() })
    }

    /// The spec as JSON (for [`Spec::parse_json`] in another process).
    pub fn to_json(&self) -> String {
        serde_json::to_string(&self.body).expect("specs serialise")
    }

    /// Every point in the sweep's fixed order: devices, axes (in path order, values in order),
    /// policies, BG apps, seeds — the last varying fastest.
    pub fn points(&self) -> Result<Vec<Point>> {
        let spec = &self.body;
        let devices = if spec.devices.is_empty() {
            if spec.scenario.starts_with(NAMED_PREFIX) {
                return Err(fail!(
                    "{}: scenario `{}` is the bench's workload, which has no device of its own: name one with `devices = [\"FILE\"]` (a `forefront bench calibrate` output, or a built-in device)",
                    self.file,
                    spec.scenario
                ));
            }
            let sc = forefront_workload::Scenario::load(&spec.scenario).map_err(|e| fail!("{e}"))?;
            vec![sc.device]
        } else {
            spec.devices.clone()
        };
        let seeds: Vec<u64> = match &spec.seeds {
            Seeds::Count(n) => (1..=*n).collect(),
            Seeds::List(v) => v.clone(),
        };
        let mut combos: Vec<BTreeMap<String, serde_json::Value>> = vec![BTreeMap::new()];
        for (k, vals) in &spec.axes {
            combos = combos
                .into_iter()
                .flat_map(|c| {
                    vals.iter().map(move |v| {
                        let mut c = c.clone();
                        c.insert(k.clone(), serde_json::to_value(v).expect("TOML values are JSON"));
                        c
                    })
                })
                .collect();
        }
        let mut out = vec![];
        for d in &devices {
            for variant in self.variant_combos() {
                for axes in &combos {
                    for p in &spec.policies {
                        for &bg in &spec.bg_apps {
                            for &seed in &seeds {
                                out.push(Point {
                                    policy: p.clone(),
                                    bg_apps: bg,
                                    device: d.clone(),
                                    seed,
                                    axes: axes.clone(),
                                    variant: variant.clone(),
                                });
                            }
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    /// Variant groups in the order they first appear, each with its variants in order.
    fn variant_groups(&self) -> Vec<(&str, Vec<&Variant>)> {
        let mut groups: Vec<(&str, Vec<&Variant>)> = vec![];
        for v in &self.body.variants {
            match groups.iter_mut().find(|g| g.0 == v.group) {
                Some(g) => g.1.push(v),
                None => groups.push((&v.group, vec![v])),
            }
        }
        groups
    }

    /// Every combination of one variant per group (first group slowest), as `a/b` names;
    /// `[None]` without variants.
    fn variant_combos(&self) -> Vec<Option<String>> {
        let groups = self.variant_groups();
        if groups.is_empty() {
            return vec![None];
        }
        let mut combos = vec![String::new()];
        for (_, vs) in &groups {
            combos = combos
                .iter()
                .flat_map(|c| vs.iter().map(move |v| if c.is_empty() { v.name.clone() } else { format!("{c}/{}", v.name) }))
                .collect();
        }
        combos.into_iter().map(Some).collect()
    }

    /// The run configuration of a point: the scenario on the point's device, with its variants'
    /// fields and then its axes set; a point with variants has them appended to its scenario's
    /// name (`webbench/usb/ram-cache`), so reports tell its runs apart.
    pub fn config(&self, p: &Point) -> Result<RunConfig> {
        let file = &self.file;
        let mut cfg = match self.body.scenario.strip_prefix(NAMED_PREFIX) {
            // The bench's workload (`bench:FG/BG`), built for the point's device.
            Some(name) => RunConfig {
                scenario: BenchWorkload::named_scenario(name, &p.device).map_err(|e| fail!("{file}: scenario: {e}"))?,
                device: forefront_workload::load_device(&p.device).map_err(|e| fail!("{e}"))?,
                policy: Policy::by_name(&p.policy).map_err(|e| fail!("{file}: policies: {e}"))?,
                bg_apps: p.bg_apps,
                seed: p.seed,
            },
            None => RunConfig::builtin(&self.body.scenario, &p.policy, Some(p.bg_apps), p.seed).map_err(|e| fail!("{e}"))?,
        };
        cfg.device = forefront_workload::load_device(&p.device).map_err(|e| fail!("{e}"))?;
        let json = |e: serde_json::Error| fail!("{e}");
        let (mut sc, mut dev) =
            (serde_json::to_value(&cfg.scenario).map_err(json)?, serde_json::to_value(&cfg.device).map_err(json)?);
        // The agent's configuration, for the `agent` policy's points.
        let mut agent = match (&cfg.policy.agent, &self.body.agent_config) {
            (None, _) => None,
            (Some(_), Some(path)) => Some(
                forefront_policy::agent::config::Config::load(Path::new(path))
                    .map_err(|e| fail!("{file}: agent_config: {e}"))
                    .and_then(|c| serde_json::to_value(c).map_err(json))?,
            ),
            (Some(c), None) => Some(serde_json::to_value(c).map_err(json)?),
        };
        let mut set = |path: &str, v: &serde_json::Value| match (path.strip_prefix("device."), path.strip_prefix("agent.")) {
            (Some(rest), _) => set_path(&mut dev, rest, v),
            (_, Some(rest)) => agent.as_mut().map_or(Ok(()), |a| set_path(a, rest, v)),
            _ => set_path(&mut sc, path, v),
        };
        if let Some(names) = &p.variant {
            let groups = self.variant_groups();
            let names: Vec<&str> = names.split('/').collect();
            if names.len() != groups.len() {
                return Err(fail!("{file}: point variant `{}` does not name one variant per group", names.join("/")));
            }
            for ((group, vs), name) in groups.iter().zip(&names) {
                let v =
                    vs.iter().find(|v| v.name == *name).ok_or_else(|| fail!("{file}: no variant `{name}` in group `{group}`"))?;
                for (path, value) in &v.set {
                    let value = serde_json::to_value(value).map_err(json)?;
                    set(path, &value).map_err(|e| fail!("{file}: variant `{name}`: set.\"{path}\": {e}"))?;
                }
            }
        }
        for (path, v) in &p.axes {
            set(path, v).map_err(|e| fail!("{file}: axes.\"{path}\": {e}"))?;
        }
        if let Some(names) = &p.variant {
            let name = format!("{}/{names}", sc["name"].as_str().unwrap_or_default());
            sc["name"] = serde_json::Value::String(name);
        }
        let base = (serde_json::to_value(&cfg.scenario).map_err(json)?, serde_json::to_value(&cfg.device).map_err(json)?);
        cfg.scenario = serde_json::from_value(sc).map_err(|e| self.culprit(p, &base, "scenario", &e))?;
        cfg.device = serde_json::from_value(dev).map_err(|e| self.culprit(p, &base, "device", &e))?;
        // The checks of a loaded scenario and device, and the run's (limits, capacity), on the
        // values the point's variants and axes set.
        let what = || {
            let mut set: Vec<String> = p.axes.iter().map(|(k, v)| format!("{k} = {v}")).collect();
            if let Some(v) = &p.variant {
                set.insert(0, format!("variant {v}"));
            }
            if set.is_empty() {
                String::new()
            } else {
                format!("point with {}: ", set.join(", "))
            }
        };
        if let Some(a) = agent {
            let c: forefront_policy::agent::config::Config = serde_json::from_value(a)
                .map_err(|e| fail!("{file}: {}the agent's config does not accept it: {}", what(), json_message(&e)))?;
            c.validate(Path::new(file)).map_err(|e| fail!("{}{e}", what()))?;
            cfg.policy.agent = Some(Box::new(c));
        }
        cfg.check().map_err(|e| fail!("{file}: {}{e}", what()))?;
        Ok(cfg)
    }

    /// The axis or variant field whose value the scenario or device (`what`) does not accept,
    /// found by setting each of the point's values alone on the `base` values; `e` when none is
    /// wrong alone.
    fn culprit(&self, p: &Point, base: &(serde_json::Value, serde_json::Value), what: &str, e: &serde_json::Error) -> SweepError {
        let file = &self.file;
        let mut sets: Vec<(String, String, serde_json::Value)> =
            p.axes.iter().map(|(k, v)| (format!("axes.\"{k}\""), k.clone(), v.clone())).collect();
        for v in &self.body.variants {
            for (k, value) in &v.set {
                let value = serde_json::to_value(value).unwrap_or_default();
                sets.push((format!("variant `{}`: set.\"{k}\"", v.name), k.clone(), value));
            }
        }
        for (label, path, value) in sets {
            let (mut sc, mut dev) = base.clone();
            let target = if let Some(rest) = path.strip_prefix("device.") {
                (set_path(&mut dev, rest, &value), "device")
            } else {
                (set_path(&mut sc, &path, &value), "scenario")
            };
            if target.1 != what || target.0.is_err() {
                continue;
            }
            let err = if what == "device" {
                serde_json::from_value::<forefront_model::flash::FlashParams>(dev).err()
            } else {
                serde_json::from_value::<forefront_workload::Scenario>(sc).err()
            };
            if let Some(err) = err {
                return fail!("{file}: {label}: the {what} does not accept {value}: {}", json_message(&err));
            }
        }
        fail!("{file}: axes: the {what} does not accept them: {}", json_message(e))
    }

    /// Run the point at `index` (in [`Spec::points`]' order) and return its line: what one
    /// task of a distributed sweep does. A run that panics gives a failure line (its `error`);
    /// an error is a point that cannot be configured.
    pub fn run_point(&self, index: usize) -> Result<Line> {
        let all = self.points()?;
        let p = all.get(index).ok_or_else(|| fail!("{}: no point {index} (the sweep has {})", self.file, all.len()))?;
        let cfg = self.config(p)?;
        let origin = Origin { sweep: self.id(), shard: (0, 1), points: all.len() };
        Ok(match std::panic::catch_unwind(|| forefront_sim::try_run(&cfg)) {
            Ok(Ok(r)) => Line::new(&origin, index, p.clone(), &r),
            Ok(Err(e)) => Line::failed(&origin, index, p.clone(), format!("the run failed: {e}")),
            Err(payload) => Line::failed(&origin, index, p.clone(), panic_message(payload.as_ref())),
        })
    }
}

/// What a caught panic says, as a line's `error`.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into());
    format!("the run panicked: {msg}")
}

/// Rewrite the sweep file at `path` in its canonical form ([`canonical`]: index order, one line
/// per point) through a temporary file renamed over it, unless it already is; its lines.
/// What a finished sweep leaves, however it was interrupted and resumed.
pub fn finish(path: &Path) -> Result<Vec<Line>> {
    use std::io::Write;
    let name = path.display().to_string();
    let lines = canonical(read_lines(path)?.into_iter().map(|l| (name.clone(), l)).collect())?;
    let mut text = String::new();
    for l in &lines {
        text.push_str(&l.to_json());
        text.push('\n');
    }
    if std::fs::read(path).map_err(|e| fail!("{name}: {e}"))? != text.as_bytes() {
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let io = |e: std::io::Error| fail!("{name}: {e}");
        let mut tmp = tempfile::Builder::new().prefix(".sweep.").suffix(".tmp").tempfile_in(dir).map_err(io)?;
        let mode = std::fs::metadata(path).map_err(io)?.permissions();
        tmp.as_file().set_permissions(mode).map_err(io)?;
        tmp.write_all(text.as_bytes()).map_err(io)?;
        tmp.as_file().sync_all().map_err(io)?;
        tmp.persist(path).map_err(|e| io(e.error))?;
    }
    Ok(lines)
}

/// A JSON error without its position (" at line 1 column 42" of text a program wrote, which
/// says nothing to the person who wrote the dict it came from).
pub fn json_message(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) if e.line() > 0 => s[..i].to_string(),
        _ => s,
    }
}

/// Set `value` at the dotted `path` of `target` (which must exist).
fn set_path(target: &mut serde_json::Value, path: &str, value: &serde_json::Value) -> std::result::Result<(), String> {
    let mut cur = target;
    for key in path.split('.') {
        cur = cur.get_mut(key).ok_or_else(|| format!("no field `{key}`"))?;
    }
    *cur = value.clone();
    Ok(())
}

/// `I/N` (0 ≤ I < N) as (I, N).
pub fn parse_shard(s: &str) -> Result<(usize, usize)> {
    let (i, n) = s.split_once('/').ok_or_else(|| fail!("--shard {s}: expected I/N"))?;
    let i: usize = i.parse().map_err(|e| fail!("--shard {s}: I: {e}"))?;
    let n: usize = n.parse().map_err(|e| fail!("--shard {s}: N: {e}"))?;
    if n == 0 || i >= n {
        return Err(fail!("--shard {s}: need 0 <= I < N"));
    }
    Ok((i, n))
}

/// Read `reader` line by line, each line at most `limit` bytes (without its newline); `f` gets
/// the 1-based line number and the line. A longer line, or one that is not UTF-8, is an error
/// naming `file`, the line and the byte offset, read no further than the limit: a bounded
/// reader for every line-oriented input (a resume file that is `/dev/zero` does not grow).
pub fn for_each_line<R: std::io::BufRead>(
    file: &str,
    mut reader: R,
    limit: usize,
    mut f: impl FnMut(usize, &str) -> Result<()>,
) -> Result<()> {
    use std::io::Read;
    let mut buf = Vec::new();
    let (mut line, mut offset) = (0usize, 0u64);
    loop {
        buf.clear();
        line += 1;
        let n = (&mut reader).take(limit as u64 + 1).read_until(b'\n', &mut buf).map_err(|e| fail!("{file}:{line}: {e}"))?;
        if n == 0 {
            return Ok(());
        }
        let text = buf.strip_suffix(b"\n").unwrap_or(&buf);
        if text.len() > limit {
            return Err(fail!(
                "{file}:{line}: line longer than {} MiB (at byte {offset}): not a sweep's JSON Lines file",
                limit >> 20
            ));
        }
        let text = std::str::from_utf8(text)
            .map_err(|e| fail!("{file}:{line}: not UTF-8 at byte {}", offset + e.valid_up_to() as u64))?;
        f(line, text)?;
        offset += n as u64;
    }
}

/// The lines of a JSON Lines file (none if it does not exist); lines over
/// [`MAX_LINE_BYTES`] are refused.
pub fn read_lines(path: &Path) -> Result<Vec<Line>> {
    let f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(fail!("{}: {e}", path.display())),
    };
    read_existing(path, f)
}

fn read_existing(path: &Path, f: std::fs::File) -> Result<Vec<Line>> {
    let file = path.display().to_string();
    if f.metadata().map_err(|e| fail!("{file}: {e}"))?.is_dir() {
        return Err(fail!("{file}: is a directory"));
    }
    let mut out = vec![];
    for_each_line(&file, std::io::BufReader::new(f), MAX_LINE_BYTES, |i, l| {
        if !l.trim().is_empty() {
            out.push(Line::parse(&file, i, l)?);
        }
        Ok(())
    })?;
    Ok(out)
}

/// The indices of the points of `spec` that already have a result in `lines` (failures do not
/// count: a resume runs them again); an error for a line of another sweep.
pub fn done_indices(file: &str, spec: &Spec, all: &[Point], lines: &[Line]) -> Result<BTreeSet<usize>> {
    let id = spec.id();
    let mut done = BTreeSet::new();
    for l in lines {
        if l.sweep != id || l.points != all.len() || all.get(l.index) != Some(&l.point) {
            return Err(fail!(
                "{file}: has lines of another sweep (sweep {} of {} points, point {}; this spec is sweep {id} of {} points): \
                 give another output file",
                l.sweep,
                l.points,
                l.index,
                all.len()
            ));
        }
        if l.ok() {
            done.insert(l.index);
        }
    }
    Ok(done)
}

/// One line per point, in index order: a result where there is one (two results for one point
/// must be the same bytes), else the last failure. What a finished sweep leaves in its file and
/// what a merge writes; `file` names the source in messages.
pub fn canonical(lines: Vec<(String, Line)>) -> Result<Vec<Line>> {
    let mut by_index: BTreeMap<usize, (String, Line)> = BTreeMap::new();
    for (from, l) in lines {
        match by_index.get(&l.index) {
            Some((other_from, other)) if other.ok() && l.ok() => {
                if other.report != l.report || other.point != l.point {
                    return Err(fail!("point {} differs between {other_from} and {from}", l.index));
                }
            }
            Some((_, other)) if other.ok() => {}
            _ => {
                by_index.insert(l.index, (from, l));
            }
        }
    }
    Ok(by_index.into_values().map(|(_, l)| l).collect())
}

/// The result of joining shard outputs ([`merge`]).
#[derive(Debug)]
pub struct Merged {
    /// One line per point that has one, in index order, each marked shard `0/1`.
    pub lines: Vec<Line>,
    /// The sweep's size.
    pub points: usize,
    /// Points with no line at all, and with only a failure.
    pub missing: Vec<usize>,
    pub failed: Vec<usize>,
    /// The shard count the lines name (1 for unsharded sweeps).
    pub shards: usize,
}

impl Merged {
    /// Whether every point has a result.
    pub fn complete(&self) -> bool {
        self.missing.is_empty() && self.failed.is_empty()
    }

    /// What is missing, for a message: the points (as ranges) and, for a sharded sweep, the
    /// shards that have none of their points (a file that was not given, or a task that never ran).
    pub fn describe_gaps(&self) -> String {
        let mut parts = vec![];
        if !self.missing.is_empty() {
            let mut s = format!("{} of {} points missing ({})", self.missing.len(), self.points, ranges(&self.missing));
            let empty: Vec<String> = (0..self.shards)
                .filter(|sh| {
                    let own: Vec<usize> = (0..self.points).filter(|i| i % self.shards == *sh).collect();
                    !own.is_empty() && own.iter().all(|i| self.missing.binary_search(i).is_ok())
                })
                .map(|sh| format!("{sh}/{}", self.shards))
                .collect();
            if !empty.is_empty() {
                s.push_str(&format!("; no line at all from shard(s) {}", empty.join(", ")));
            }
            parts.push(s);
        }
        if !self.failed.is_empty() {
            parts.push(format!("{} point(s) failed ({})", self.failed.len(), ranges(&self.failed)));
        }
        parts.join("; ")
    }
}

/// `[0, 1, 2, 5, 7, 8]` as `0-2, 5, 7-8` (at most 12 ranges, then `…`).
fn ranges(v: &[usize]) -> String {
    let mut out: Vec<String> = vec![];
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        out.push(if i == j { v[i].to_string() } else { format!("{}-{}", v[i], v[j]) });
        i = j + 1;
    }
    if out.len() > 12 {
        out.truncate(12);
        out.push("…".into());
    }
    out.join(", ")
}

/// Shard outputs joined: each point once, in index order, each line marked shard `0/1` (the
/// file one machine would have written). Every input must exist and be a sweep file of one
/// and the same spec (its identity, size and shard count); a point with two different results
/// is an error. What is missing or failed is in the result, for the caller to refuse or warn.
pub fn merge(inputs: &[&Path]) -> Result<Merged> {
    let mut all = vec![];
    let mut first: Option<(String, Line)> = None;
    for &p in inputs {
        let name = p.display().to_string();
        let f = std::fs::File::open(p).map_err(|e| fail!("{name}: {e}"))?;
        for l in read_existing(p, f)? {
            if let Some((from, f)) = &first {
                if f.sweep != l.sweep || f.points != l.points || f.shard().1 != l.shard().1 {
                    return Err(fail!(
                        "{name}: point {} is from sweep {} ({} points, {} shard(s)) but {from} is from sweep {} ({} points, {} shard(s)): \
                         not shards of one sweep",
                        l.index,
                        l.sweep,
                        l.points,
                        l.shard().1,
                        f.sweep,
                        f.points,
                        f.shard().1
                    ));
                }
            } else {
                first = Some((name.clone(), l.clone()));
            }
            all.push((name.clone(), l));
        }
    }
    let Some((_, first)) = first else {
        return Err(fail!("no sweep line in {} input file(s)", inputs.len()));
    };
    let mut lines = canonical(all)?;
    for l in &mut lines {
        l.shard = "0/1".into();
    }
    let have: BTreeSet<usize> = lines.iter().map(|l| l.index).collect();
    let missing = (0..first.points).filter(|i| !have.contains(i)).collect();
    let failed = lines.iter().filter(|l| !l.ok()).map(|l| l.index).collect();
    Ok(Merged { lines, points: first.points, missing, failed, shards: first.shard().1 })
}

/// One configuration (a point less its seed) summarised over its seeds.
#[derive(Clone, Debug)]
pub struct Summary {
    /// The point, with `seed` 0.
    pub point: Point,
    pub seeds: usize,
    /// Mean FG latency (ms) over the seeds.
    pub fg_mean_ms: f64,
    /// Half-width of the 95 % confidence interval of the mean (Student's t); `None` with one seed.
    pub ci95_ms: Option<f64>,
}

/// Mean FG latency per configuration over its seeds, with a 95 % confidence interval, in the
/// sweep's order (by each configuration's first point).
pub fn summary(all: &[Point], lines: &[Line]) -> Vec<Summary> {
    let key = |p: &Point| {
        let mut k = p.clone();
        k.seed = 0;
        (serde_json::to_string(&k).expect("points serialise"), k)
    };
    let mut groups: BTreeMap<String, (Point, Vec<f64>)> = BTreeMap::new();
    for l in lines {
        let Some(report) = &l.report else { continue };
        let (k, p) = key(&l.point);
        let fg = report["metrics"]["fg_ms"].as_f64().unwrap_or(f64::NAN);
        groups.entry(k).or_insert_with(|| (p, vec![])).1.push(fg);
    }
    let mut seen = BTreeSet::new();
    let mut out = vec![];
    for p in all {
        let (k, _) = key(p);
        if !seen.insert(k.clone()) {
            continue;
        }
        let Some((p, v)) = groups.get(&k) else { continue };
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let ci95_ms = (v.len() > 1).then(|| {
            let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
            t95(v.len() - 1) * sd / n.sqrt()
        });
        out.push(Summary { point: p.clone(), seeds: v.len(), fg_mean_ms: mean, ci95_ms });
    }
    out
}

/// Student's t for a two-sided 95 % interval with `df` degrees of freedom.
pub fn t95(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110,
        2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    T.get(df.saturating_sub(1)).copied().unwrap_or(1.960)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = "scenario = \"camera-switch\"\npolicies = [\"android\", \"fasttrack\"]\nbg_apps = [0, 1]\nseeds = 2\n[axes]\n\"device.starvation_ms\" = [250.0, 500.0]\n";

    #[test]
    fn agent_axes_set_the_agents_config_on_its_points_only() {
        let text = "scenario = \"launch-update\"\npolicies = [\"android\", \"agent\"]\nbg_apps = [1]\nseeds = 1\n[axes]\n\"agent.pause.max_ms\" = [500, 3000]\n\"agent.io.bg_weight\" = [10, 100]\n";
        let spec = Spec::parse("a.toml", text).unwrap();
        let pts = spec.points().unwrap();
        assert_eq!(pts.len(), 8);
        let mut seen = BTreeSet::new();
        for p in &pts {
            let c = spec.config(p).unwrap();
            match &c.policy.agent {
                None => assert_eq!(p.policy, "android"),
                Some(a) => {
                    assert_eq!(serde_json::json!(a.pause.max_ms), p.axes["agent.pause.max_ms"]);
                    assert_eq!(serde_json::json!(a.io.bg_weight), p.axes["agent.io.bg_weight"]);
                    seen.insert((a.pause.max_ms, a.io.bg_weight));
                }
            }
        }
        assert_eq!(seen.len(), 4);
        // The agent's own checks, and its field names, on the values an axis sets.
        let bad = Spec::parse("a.toml", &text.replace("[500, 3000]", "[0]")).unwrap();
        let p = bad.points().unwrap().into_iter().find(|p| p.policy == "agent").unwrap();
        let e = bad.config(&p).unwrap_err().0;
        assert!(e.contains("pause.max_ms") && e.contains("outside 1..=60000"), "{e}");
        let typo = Spec::parse("a.toml", &text.replace("agent.pause.max_ms", "agent.pause.max_mss")).unwrap();
        let p = typo.points().unwrap().into_iter().find(|p| p.policy == "agent").unwrap();
        let e = typo.config(&p).unwrap_err().0;
        assert!(e.contains("agent.pause.max_mss") && e.contains("no field `max_mss`"), "{e}");
    }

    #[test]
    fn the_benchs_workload_is_a_scenario_on_the_named_device() {
        let text = "scenario = \"bench:launch/update\"\npolicies = [\"android\", \"agent\"]\nbg_apps = [2]\nseeds = 1\n\
                    devices = [\"galaxy-s6-ufs\"]\n[axes]\n\"phone.scheduler\" = [{ kind = \"bfq\" }]\n\"agent.pause.max_ms\" = [250]\n";
        let spec = Spec::parse("b.toml", text).unwrap();
        let pts = spec.points().unwrap();
        assert_eq!(pts.len(), 2);
        let c = spec.config(&pts[1]).unwrap();
        assert_eq!((c.scenario.name.as_str(), c.scenario.headline.as_str(), c.bg_apps), ("bench-launch-update", "launch", 2));
        assert_eq!(c.scenario.device, "galaxy-s6-ufs");
        assert_eq!(serde_json::to_value(&c.scenario.phone.scheduler).unwrap()["kind"], "bfq");
        assert_eq!(c.policy.agent.as_ref().map(|a| a.pause.max_ms), Some(250));
        // The points run, ten launches each.
        let line = spec.run_point(1).unwrap();
        let r = line.report.unwrap_or_else(|| panic!("{:?}", line.error));
        assert_eq!(r["metrics"]["fg_samples_ms"].as_array().map(Vec::len), Some(10), "{}", r["metrics"]);
        // Without a device: said so, as is a name that is not FG/BG.
        let e = Spec::parse("b.toml", &text.replace("devices = [\"galaxy-s6-ufs\"]\n", "")).unwrap().points().unwrap_err().0;
        assert!(e.contains("no device of its own") && e.contains("devices = "), "{e}");
        let bad = Spec::parse("b.toml", &text.replace("launch/update", "launch/download")).unwrap();
        let e = bad.config(&bad.points().unwrap()[0]).unwrap_err().0;
        assert!(e.starts_with("b.toml: scenario: ") && e.contains("`download`"), "{e}");
    }

    #[test]
    fn points_come_in_the_fixed_order_seeds_fastest() {
        let s = Spec::parse("s.toml", SPEC).unwrap();
        let p = s.points().unwrap();
        assert_eq!(p.len(), 16);
        assert_eq!((p[0].seed, p[1].seed, p[1].bg_apps, p[2].bg_apps), (1, 2, 0, 1));
        assert_eq!(p[4].policy, "fasttrack");
        assert_eq!(p[8].axes["device.starvation_ms"], serde_json::json!(500.0));
    }

    #[test]
    fn a_json_spec_is_the_same_sweep_as_its_toml() {
        let s = Spec::parse("s.toml", SPEC).unwrap();
        let j = Spec::parse_json("dict", &s.to_json()).unwrap();
        assert_eq!(s.points().unwrap(), j.points().unwrap());
    }

    #[test]
    fn errors_name_the_file_line_and_field() {
        let e = Spec::parse("s.toml", "scenario = \"x\"\npolicies = [\"android\"]\nbg_apps = [1]\nseeds = 1\nnope = 2\n")
            .unwrap_err();
        assert!(e.0.starts_with("s.toml:5: unknown field `nope`"), "{e}");
        let e = Spec::parse("s.toml", "scenario = \"x\"\npolicies = [\"androd\"]\nbg_apps = [1]\nseeds = 1\n").unwrap_err();
        assert!(e.0.contains("s.toml: policies:") && e.0.contains("androd"), "{e}");
        let e = Spec::parse("s.toml", "scenario = \"nosuch\"\npolicies = [\"android\"]\nbg_apps = [1]\nseeds = 1\n").unwrap();
        assert!(e.points().unwrap_err().0.contains("unknown scenario `nosuch`"));
        assert_eq!(parse_shard("1/3").unwrap(), (1, 3));
        assert!(parse_shard("3/3").is_err() && parse_shard("x").is_err());
    }

    #[test]
    fn variants_make_one_dimension_per_group_and_set_their_fields() {
        let text = "scenario = \"camera-switch\"\npolicies = [\"android\"]\nbg_apps = [1]\nseeds = 1\n\
                    [[variant]]\ngroup = \"net\"\nname = \"slow\"\nset = { \"phone.net_mb_s\" = 1.0 }\n\
                    [[variant]]\ngroup = \"net\"\nname = \"fast\"\nset = { \"phone.net_mb_s\" = 50.0 }\n\
                    [[variant]]\nname = \"base\"\n\
                    [[variant]]\nname = \"quick-card\"\nset = { \"device.write_rand_iops\" = 5000.0 }\n";
        let s = Spec::parse("v.toml", text).unwrap();
        let p = s.points().unwrap();
        let names: Vec<&str> = p.iter().map(|p| p.variant.as_deref().unwrap()).collect();
        assert_eq!(names, ["slow/base", "slow/quick-card", "fast/base", "fast/quick-card"]);
        let c = s.config(&p[3]).unwrap();
        assert_eq!(c.scenario.phone.net_mb_s, 50.0);
        assert_eq!(c.device.write_rand_iops, 5000.0);
        assert_eq!(c.scenario.name, "camera-switch/fast/quick-card");
        let c = s.config(&p[0]).unwrap();
        assert_eq!(c.scenario.phone.net_mb_s, 1.0);
        assert_ne!(c.device.write_rand_iops, 5000.0);
        // Without variants a point has none, and its JSON has no `variant` key.
        let plain = Spec::parse("s.toml", SPEC).unwrap().points().unwrap();
        assert!(plain[0].variant.is_none() && !serde_json::to_string(&plain[0]).unwrap().contains("variant"));
        let dup = text.replace("name = \"fast\"", "name = \"slow\"");
        assert!(Spec::parse("v.toml", &dup).unwrap_err().0.contains("defined twice"));
        let bad = text.replace("phone.net_mb_s\" = 50.0", "phone.nope\" = 50.0");
        let e = Spec::parse("v.toml", &bad).unwrap();
        assert!(e.config(&e.points().unwrap()[2]).unwrap_err().0.contains("variant `fast`: set.\"phone.nope\": no field `nope`"));
    }

    #[test]
    fn lines_are_read_within_a_bound_and_bad_bytes_are_located() {
        let mut seen = vec![];
        for_each_line("f", &b"ab\ncd\n\nlast"[..], 8, |i, l| {
            seen.push((i, l.to_string()));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, [(1, "ab".into()), (2, "cd".into()), (3, "".into()), (4, "last".into())]);
        let e = for_each_line("f", &b"ok\n0123456789\n"[..], 8, |_, _| Ok(())).unwrap_err();
        assert!(e.0.starts_with("f:2: line longer than"), "{e}");
        // An endless input stops at the bound (`/dev/zero` as a resume file).
        let e = for_each_line("z", std::io::BufReader::new(std::io::repeat(0)), 1 << 20, |_, _| Ok(())).unwrap_err();
        assert!(e.0.starts_with("z:1: line longer than 1 MiB"), "{e}");
        let e = for_each_line("u", &b"fine\nab\xffc\n"[..], 8, |_, _| Ok(())).unwrap_err();
        assert_eq!(e.0, "u:2: not UTF-8 at byte 7");
    }

    #[test]
    fn a_line_says_its_sweep_and_the_spec_identity_ignores_layout() {
        let a = Spec::parse("a.toml", SPEC).unwrap();
        let b = Spec::parse("b.toml", &format!("# a comment\n\n{SPEC}")).unwrap();
        assert_eq!(a.id(), b.id());
        let c = Spec::parse("c.toml", &SPEC.replace("seeds = 2", "seeds = 3")).unwrap();
        assert_ne!(a.id(), c.id());
        let o = a.origin((1, 3)).unwrap();
        let p = a.points().unwrap();
        let l = Line::failed(&o, 1, p[1].clone(), "boom".into());
        let back = Line::parse("x", 1, &l.to_json()).unwrap();
        assert_eq!((back.shard(), back.points, back.ok(), back.error.as_deref()), ((1, 3), 16, false, Some("boom")));
        let both = l.to_json().replace("\"error\"", "\"report\":{},\"error\"");
        assert!(Line::parse("x", 4, &both).unwrap_err().0.contains("x:4: not a sweep line"));
        assert_eq!(ranges(&[0, 1, 2, 5, 7, 8]), "0-2, 5, 7-8");
    }

    #[test]
    fn seeds_bg_apps_and_the_point_count_are_bounded_before_anything_is_built() {
        let spec = |seeds: &str, extra: &str| {
            Spec::parse(
                "s.toml",
                &format!("scenario = \"camera-switch\"\npolicies = [\"android\"]\nbg_apps = [1]\nseeds = {seeds}\n{extra}"),
            )
        };
        let e = |seeds: &str, extra: &str| spec(seeds, extra).unwrap_err().0;
        assert!(e("0", "").starts_with("s.toml: seeds: 0 seeds make no run"), "{}", e("0", ""));
        assert!(e("[1, 2, 1]", "").contains("seeds: seed 1 is listed twice"));
        assert!(e("[]", "").contains("seeds: the list is empty"));
        assert!(e("1000000000000", "").contains("seeds: 1000000000000 seeds are over the limit of 10000"));
        let big =
            Spec::parse("s.toml", "scenario = \"camera-switch\"\npolicies = [\"android\"]\nbg_apps = [1000000000]\nseeds = 1\n");
        assert!(big.unwrap_err().0.contains("bg_apps: 1000000000 is over the limit of 1000"));
        // Six axes of 1000 values: 1e18 points, refused at once (not materialised).
        let vals = format!("[{}]", (0..1000).map(|i| (i + 16).to_string()).collect::<Vec<_>>().join(", "));
        let axes: String = [
            "phone.page_cache_mib",
            "phone.read_ahead_kib",
            "phone.nr_requests",
            "phone.max_request_kib",
            "phone.fg_cpu_shares",
            "phone.bg_cpu_shares",
        ]
        .iter()
        .map(|k| format!("\"{k}\" = {vals}\n"))
        .collect();
        let t = std::time::Instant::now();
        let msg = e("1", &format!("[axes]\n{axes}"));
        assert!(msg.contains("more than 1000000 points"), "{msg}");
        assert!(t.elapsed() < std::time::Duration::from_secs(1));
        assert_eq!(spec("3", "").unwrap().points().unwrap().len(), 3);
    }

    #[test]
    fn axes_obey_the_scenario_and_device_checks_and_a_wrong_type_names_its_axis() {
        let spec = |axes: &str| {
            let s = Spec::parse(
                "s.toml",
                &format!("scenario = \"camera-switch\"\npolicies = [\"android\"]\nbg_apps = [1]\nseeds = 1\n[axes]\n{axes}"),
            )
            .unwrap();
            let p = s.points().unwrap();
            s.config(&p[0]).map(|_| ()).map_err(|e| e.0)
        };
        for (axes, want) in [
            ("\"device.queue_depth\" = [0]", "queue_depth must be 1..=256, got 0"),
            ("\"device.capacity_gib\" = [0]", "capacity_gib must be in 1..=1048576, got 0"),
            ("\"device.read_seq_mb_s\" = [-1.0]", "read_seq_mb_s must be a positive number, got -1"),
            ("\"phone.fs.journal_mib\" = [0]", "phone.fs.journal_mib must be in 1..="),
            ("\"phone.writeback_interval_s\" = [0.0]", "phone.writeback_interval_s must be a number in [0.01, 3600], got 0"),
            ("\"bg_apps\" = [5000]", "bg_apps: 5000 is over the limit"),
        ] {
            let e = spec(axes).unwrap_err();
            assert!(e.starts_with("s.toml: point with ") && e.contains(want), "{axes}: {e}");
        }
        let e = spec("\"phone.page_cache_mib\" = [\"lots\"]").unwrap_err();
        assert!(
            e.starts_with("s.toml: axes.\"phone.page_cache_mib\": the scenario does not accept \"lots\": invalid type: string"),
            "{e}"
        );
        let e = spec("\"device.queue_depth\" = [1.5]").unwrap_err();
        assert!(e.starts_with("s.toml: axes.\"device.queue_depth\": the device does not accept 1.5"), "{e}");
        spec("\"device.queue_depth\" = [4]").unwrap();
    }

    #[test]
    fn t_shrinks_towards_the_normal_quantile() {
        assert_eq!(t95(1), 12.706);
        assert_eq!(t95(1000), 1.960);
    }
}
