//! `forefront sim sweep SPEC.toml`: a declarative sweep — policies × background apps × devices
//! × any scenario or device field × seeds — run on every local core, one JSON line per run
//! appended to an output file (resumable: points already there are skipped), a summary with
//! 95 % confidence intervals across seeds, and `--shard I/N` to split the points between
//! machines (a Slurm job array, a Kubernetes Indexed Job); `forefront sim merge` joins shards
//! into exactly the file one machine would have written.
//!
//! ```toml
//! scenario = "launch-update"                 # built-in name or a scenario file
//! policies = ["android", "fasttrack"]
//! bg_apps = [1, 2, 4]
//! devices = ["galaxy-s6-ufs"]                # optional: default the scenario's device
//! seeds = 3                                  # seeds 1..=3 (or a list: [1, 5, 9])
//! [axes]                                     # optional: dotted paths into the scenario or,
//! "phone.page_cache_mib" = [256, 768]        # with the `device.` prefix, into the device
//! "device.starvation_ms" = [100.0, 500.0]
//! ```
//!
//! Each line of the output is `{"index": N, "point": {...}, "report": {...}}`: the point's index
//! in the sweep's fixed order, what varies, and the run's report without its wall-clock
//! `stats` (so the file is the same bytes for the same spec, however it was computed).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Args;
use forefront_policy::Policy;
use forefront_record::run::RunReport;
use forefront_sim::RunConfig;
use serde::{Deserialize, Serialize};

#[derive(Args)]
pub struct SweepArgs {
    /// The sweep specification (TOML).
    spec: PathBuf,
    /// JSON Lines output; runs already in it are skipped (resume), new ones appended.
    #[arg(short = 'o', long = "output", value_name = "FILE.jsonl")]
    output: PathBuf,
    /// Run only shard I of N (0 ≤ I < N): the points whose index mod N is I. For a Slurm job
    /// array use `--shard $SLURM_ARRAY_TASK_ID/N` (array 0..N-1), for a Kubernetes Indexed Job
    /// `--shard $JOB_COMPLETION_INDEX/N`; join the shards with `forefront sim merge`.
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
}

#[derive(Args)]
pub struct MergeArgs {
    /// Shard outputs of one sweep (JSON Lines).
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// The merged file (kept if it exists, unless --force).
    #[arg(short = 'o', long = "output")]
    output: PathBuf,
    #[arg(long)]
    force: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Spec {
    scenario: String,
    policies: Vec<String>,
    bg_apps: Vec<u32>,
    #[serde(default)]
    devices: Vec<String>,
    seeds: Seeds,
    #[serde(default)]
    axes: BTreeMap<String, Vec<toml::Value>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Seeds {
    Count(u64),
    List(Vec<u64>),
}

/// What varies at one point of the sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Point {
    policy: String,
    bg_apps: u32,
    device: String,
    seed: u64,
    /// Axis path → value (JSON), in path order.
    axes: BTreeMap<String, serde_json::Value>,
}

#[derive(Serialize, Deserialize)]
struct Line {
    index: usize,
    point: Point,
    report: serde_json::Value,
}

fn load_spec(path: &Path) -> anyhow::Result<Spec> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
    let spec: Spec = toml::from_str(&text).map_err(|e| {
        let line = e.span().map_or(1, |s| text[..s.start.min(text.len())].matches('\n').count() + 1);
        anyhow::anyhow!("{}:{line}: {}", path.display(), e.message().trim())
    })?;
    let file = path.display();
    anyhow::ensure!(!spec.policies.is_empty(), "{file}: `policies` is empty");
    anyhow::ensure!(!spec.bg_apps.is_empty(), "{file}: `bg_apps` is empty");
    for p in &spec.policies {
        Policy::by_name(p).map_err(|e| anyhow::anyhow!("{file}: policies: {e}"))?;
    }
    for (k, v) in &spec.axes {
        anyhow::ensure!(!v.is_empty(), "{file}: axes.\"{k}\" has no value");
    }
    Ok(spec)
}

/// Every point in the sweep's fixed order: devices, axes (in path order, values in order),
/// policies, BG apps, seeds — the last varying fastest.
fn points(spec: &Spec, default_device: &str) -> Vec<Point> {
    let devices = if spec.devices.is_empty() { vec![default_device.to_string()] } else { spec.devices.clone() };
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
        for axes in &combos {
            for p in &spec.policies {
                for &bg in &spec.bg_apps {
                    for &seed in &seeds {
                        out.push(Point { policy: p.clone(), bg_apps: bg, device: d.clone(), seed, axes: axes.clone() });
                    }
                }
            }
        }
    }
    out
}

/// Set `value` at the dotted `path` of `target` (which must exist).
fn set_path(target: &mut serde_json::Value, path: &str, value: &serde_json::Value) -> Result<(), String> {
    let mut cur = target;
    for key in path.split('.') {
        cur = cur.get_mut(key).ok_or_else(|| format!("no field `{key}`"))?;
    }
    *cur = value.clone();
    Ok(())
}

fn config(spec_path: &Path, spec: &Spec, p: &Point) -> anyhow::Result<RunConfig> {
    let mut cfg = RunConfig::builtin(&spec.scenario, &p.policy, Some(p.bg_apps), p.seed)?;
    cfg.device = forefront_workload::load_device(&p.device)?;
    let (mut sc, mut dev) = (serde_json::to_value(&cfg.scenario)?, serde_json::to_value(&cfg.device)?);
    for (path, v) in &p.axes {
        let r = match path.strip_prefix("device.") {
            Some(rest) => set_path(&mut dev, rest, v),
            None => set_path(&mut sc, path, v),
        };
        r.map_err(|e| anyhow::anyhow!("{}: axes.\"{path}\": {e}", spec_path.display()))?;
    }
    cfg.scenario = serde_json::from_value(sc)
        .map_err(|e| anyhow::anyhow!("{}: axes: the scenario does not accept them: {e}", spec_path.display()))?;
    cfg.scenario.validate().map_err(|e| anyhow::anyhow!("{}: axes: {e}", spec_path.display()))?;
    cfg.device = serde_json::from_value(dev)
        .map_err(|e| anyhow::anyhow!("{}: axes: the device does not accept them: {e}", spec_path.display()))?;
    Ok(cfg)
}

/// The lines of a JSON Lines file (none if it does not exist), each with where it came from.
fn read_lines(path: &Path) -> anyhow::Result<Vec<Line>> {
    let f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(e).with_context(|| format!("{}", path.display())),
    };
    let mut out = vec![];
    for (i, l) in std::io::BufReader::new(f).lines().enumerate() {
        let l = l.with_context(|| format!("{}", path.display()))?;
        if l.trim().is_empty() {
            continue;
        }
        out.push(serde_json::from_str(&l).map_err(|e| anyhow::anyhow!("{}:{}: not a sweep line: {e}", path.display(), i + 1))?);
    }
    Ok(out)
}

pub fn sweep(a: SweepArgs, run_all: fn(&[RunConfig]) -> Vec<RunReport>) -> anyhow::Result<ExitCode> {
    let spec = load_spec(&a.spec)?;
    let (shard, of) = match &a.shard {
        None => (0, 1),
        Some(s) => {
            let (i, n) = s.split_once('/').ok_or_else(|| anyhow::anyhow!("--shard {s}: expected I/N"))?;
            let (i, n): (usize, usize) = (i.parse().context("--shard I")?, n.parse().context("--shard N")?);
            anyhow::ensure!(n >= 1 && i < n, "--shard {s}: need 0 <= I < N");
            (i, n)
        }
    };
    let default_device = forefront_workload::Scenario::load(&spec.scenario)?.device;
    let all = points(&spec, &default_device);
    let done: BTreeSet<usize> = read_lines(&a.output)?
        .into_iter()
        .map(|l| {
            if all.get(l.index) != Some(&l.point) {
                bail!("{}: line for point {} does not belong to this sweep (another spec?)", a.output.display(), l.index);
            }
            Ok(l.index)
        })
        .collect::<anyhow::Result<_>>()?;
    let todo: Vec<usize> = (0..all.len()).filter(|i| i % of == shard && !done.contains(i)).collect();
    eprintln!(
        "sweep: {} points, shard {shard}/{of}: {} to run, {} already in {}",
        all.len(),
        todo.len(),
        done.len(),
        a.output.display()
    );
    let cfgs: Vec<RunConfig> = todo.iter().map(|&i| config(&a.spec, &spec, &all[i])).collect::<anyhow::Result<_>>()?;
    let reports = run_all(&cfgs);
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&a.output)
        .with_context(|| format!("{}", a.output.display()))?;
    for (&i, r) in todo.iter().zip(reports) {
        let mut report = serde_json::to_value(&r)?;
        report.as_object_mut().expect("an object").remove("stats");
        let line = Line { index: i, point: all[i].clone(), report };
        writeln!(out, "{}", serde_json::to_string(&line)?)?;
    }
    out.flush()?;
    summary(&all, &read_lines(&a.output)?)?;
    Ok(ExitCode::SUCCESS)
}

/// Mean FG latency per configuration over its seeds, with a 95 % confidence interval
/// (Student's t), on stderr-free stdout as a markdown table.
fn summary(all: &[Point], lines: &[Line]) -> anyhow::Result<()> {
    let mut groups: BTreeMap<String, (Point, Vec<f64>)> = BTreeMap::new();
    for l in lines {
        let mut key = l.point.clone();
        key.seed = 0;
        let k = serde_json::to_string(&key)?;
        let fg = l.report["metrics"]["fg_ms"].as_f64().unwrap_or(f64::NAN);
        groups.entry(k).or_insert_with(|| (key, vec![])).1.push(fg);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{} of {} points done", lines.len(), all.len())?;
    writeln!(out, "| device | axes | policy | BG apps | seeds | FG mean ms | 95 % CI ± |")?;
    writeln!(out, "|---|---|---|---|---|---|---|")?;
    // In the sweep's order: by the first index of each group.
    let order: Vec<String> = all
        .iter()
        .map(|p| {
            let mut k = p.clone();
            k.seed = 0;
            serde_json::to_string(&k).expect("points serialise")
        })
        .collect();
    let mut seen = BTreeSet::new();
    for k in order {
        if !seen.insert(k.clone()) {
            continue;
        }
        let Some((p, v)) = groups.get(&k) else { continue };
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let ci = if v.len() > 1 {
            let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
            format!("{:.1}", t95(v.len() - 1) * sd / n.sqrt())
        } else {
            "–".into()
        };
        let axes: Vec<String> = p.axes.iter().map(|(k, v)| format!("{k}={v}")).collect();
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {:.1} | {} |",
            p.device,
            axes.join(" "),
            p.policy,
            p.bg_apps,
            v.len(),
            mean,
            ci
        )?;
    }
    Ok(())
}

/// Student's t for a two-sided 95 % interval with `df` degrees of freedom.
fn t95(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110,
        2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    T.get(df.saturating_sub(1)).copied().unwrap_or(1.960)
}

pub fn merge(a: MergeArgs) -> anyhow::Result<ExitCode> {
    if !a.force && a.output.exists() {
        bail!("{} exists; pass --force to overwrite it", a.output.display());
    }
    let mut by_index: BTreeMap<usize, (String, PathBuf)> = BTreeMap::new();
    for p in &a.inputs {
        for l in read_lines(p)? {
            let text = serde_json::to_string(&l)?;
            if let Some((other, from)) = by_index.get(&l.index) {
                anyhow::ensure!(*other == text, "point {} differs between {} and {}", l.index, from.display(), p.display());
                continue;
            }
            by_index.insert(l.index, (text, p.clone()));
        }
    }
    let mut out = std::io::BufWriter::new(std::fs::File::create(&a.output).with_context(|| format!("{}", a.output.display()))?);
    for (text, _) in by_index.values() {
        writeln!(out, "{text}")?;
    }
    out.flush()?;
    eprintln!("merged {} points from {} file(s) into {}", by_index.len(), a.inputs.len(), a.output.display());
    Ok(ExitCode::SUCCESS)
}
