//! `forefront sim sweep SPEC.toml`: a declarative sweep — policies × background apps × devices
//! × any scenario or device field × seeds — run on every local core, one JSON line per run
//! appended to an output file (resumable: points already there are skipped), a summary with
//! 95 % confidence intervals across seeds, and `--shard I/N` to split the points between
//! machines (a Slurm job array, a Kubernetes Indexed Job); `forefront sim merge` joins shards
//! into exactly the file one machine would have written.
//!
//! The spec format, the points' order, the lines and the merge are `forefront-sweep`'s (one
//! implementation with the Python package); this module is the command line around them.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Args;
use forefront_record::run::RunReport;
use forefront_sim::RunConfig;
use forefront_sweep::{Line, Point, Spec};

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

pub fn sweep(a: SweepArgs, run_all: fn(&[RunConfig]) -> Vec<RunReport>) -> anyhow::Result<ExitCode> {
    let spec = Spec::load(&a.spec)?;
    let (shard, of) = a.shard.as_deref().map_or(Ok((0, 1)), forefront_sweep::parse_shard)?;
    let all = spec.points()?;
    let output = a.output.display().to_string();
    let done = forefront_sweep::done_indices(&output, &all, &forefront_sweep::read_lines(&a.output)?)?;
    let todo: Vec<usize> = (0..all.len()).filter(|i| i % of == shard && !done.contains(i)).collect();
    eprintln!("sweep: {} points, shard {shard}/{of}: {} to run, {} already in {output}", all.len(), todo.len(), done.len());
    let cfgs: Vec<RunConfig> = todo.iter().map(|&i| spec.config(&all[i])).collect::<Result<_, _>>()?;
    let reports = run_all(&cfgs);
    let mut out = std::fs::OpenOptions::new().create(true).append(true).open(&a.output).with_context(|| output.clone())?;
    for (&i, r) in todo.iter().zip(reports) {
        writeln!(out, "{}", Line::new(i, all[i].clone(), &r).to_json())?;
    }
    out.flush()?;
    summary(&all, &forefront_sweep::read_lines(&a.output)?)?;
    Ok(ExitCode::SUCCESS)
}

/// Mean FG latency per configuration over its seeds, with a 95 % confidence interval
/// (Student's t), on stdout as a markdown table.
fn summary(all: &[Point], lines: &[Line]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{} of {} points done", lines.len(), all.len())?;
    let variants = all.iter().any(|p| p.variant.is_some());
    let has_axes = !variants || all.iter().any(|p| !p.axes.is_empty());
    let (vh, vs) = if variants { ("variant | ", "---|") } else { ("", "") };
    let (ah, as_) = if has_axes { ("axes | ", "---|") } else { ("", "") };
    writeln!(out, "| device | {vh}{ah}policy | BG apps | seeds | FG mean ms | 95 % CI ± |")?;
    writeln!(out, "|---|{vs}{as_}---|---|---|---|---|")?;
    for s in forefront_sweep::summary(all, lines) {
        let p = &s.point;
        let axes: Vec<String> = p.axes.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let ci = s.ci95_ms.map_or_else(|| "–".to_string(), |c| format!("{c:.1}"));
        let variant = p.variant.as_ref().map_or_else(String::new, |v| format!("{v} | "));
        let axes = if has_axes { format!("{} | ", axes.join(" ")) } else { String::new() };
        writeln!(
            out,
            "| {} | {variant}{axes}{} | {} | {} | {:.1} | {} |",
            p.device, p.policy, p.bg_apps, s.seeds, s.fg_mean_ms, ci
        )?;
    }
    Ok(())
}

pub fn merge(a: MergeArgs) -> anyhow::Result<ExitCode> {
    if !a.force && a.output.exists() {
        bail!("{} exists; pass --force to overwrite it", a.output.display());
    }
    let inputs: Vec<&std::path::Path> = a.inputs.iter().map(PathBuf::as_path).collect();
    let lines = forefront_sweep::merge(&inputs)?;
    let mut out = std::io::BufWriter::new(std::fs::File::create(&a.output).with_context(|| format!("{}", a.output.display()))?);
    for text in &lines {
        writeln!(out, "{text}")?;
    }
    out.flush()?;
    eprintln!("merged {} points from {} file(s) into {}", lines.len(), a.inputs.len(), a.output.display());
    Ok(ExitCode::SUCCESS)
}
