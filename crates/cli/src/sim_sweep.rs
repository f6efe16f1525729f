//! `forefront sim sweep SPEC.toml`: a declarative sweep — policies × background apps × devices
//! × any scenario or device field × seeds — run on every local core, one JSON line per run
//! appended to an output file (resumable: points already there are skipped), a summary with
//! 95 % confidence intervals across seeds, and `--shard I/N` to split the points between
//! machines (a Slurm job array, a Kubernetes Indexed Job); `forefront sim merge` joins shards
//! into exactly the file one machine would have written.
//!
//! The spec format, the points' order, the lines and the merge are `forefront-sweep`'s (one
//! implementation with the Python package); this module is the command line around them.

use std::io::{Seek, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Args;
use forefront_sim::RunConfig;
use forefront_sweep::{Line, Origin, Point, Spec};

use crate::output::OutputFile;
use crate::sim_cmd::{RunOutcome, Streamed};

#[derive(Args)]
#[command(after_help = "\
Every finished point is appended to the output file, and flushed, as soon as it finishes: a sweep
that is interrupted (Ctrl-C, SIGTERM at a Slurm time limit, SIGKILL, a crash) keeps every point
it finished, and the same command resumes the rest. SIGINT/SIGTERM start no new point and exit
(status 130) with what is written. A point whose run fails (a panic in the simulator) is recorded
as a line with its `error`, the others go on, and the sweep exits with status 1; a resume runs
failed points again. When every point is done the file is rewritten in index order, one line per
point (the same bytes however the sweep was run, interrupted or sharded).")]
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
#[command(after_help = "\
Every input must exist and hold lines of one and the same sweep (each line names its sweep's
identity, size and shard). Without --partial, a merge that lacks points (a shard file not given, a
task killed before it finished) or has failed points is refused with the points and shards
missing; with --partial it writes what there is and says what is missing.")]
pub struct MergeArgs {
    /// Shard outputs of one sweep (JSON Lines).
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// The merged file (kept if it exists, unless --force; never one of the inputs).
    #[arg(short = 'o', long = "output")]
    output: PathBuf,
    #[arg(long)]
    force: bool,
    /// Write the merge even if points are missing or failed (they are listed on stderr).
    #[arg(long)]
    partial: bool,
}

/// Open the sweep's output for appending, created if absent: a regular file, not the spec, and
/// not being written by another sweep (an exclusive lock held until the sweep ends). A last line
/// cut short by a kill in the middle of its write (no newline at the end of the file) is dropped.
fn open_output(a: &SweepArgs) -> anyhow::Result<nix::fcntl::Flock<std::fs::File>> {
    let name = a.output.display().to_string();
    if let Ok(m) = std::fs::metadata(&a.output) {
        if !m.is_file() {
            bail!("{name}: exists and is not a regular file; give the sweep a file to append to");
        }
    }
    crate::output::refuse_input_as_output(&a.output, &[a.spec.as_path()])?;
    let f = std::fs::OpenOptions::new().create(true).read(true).append(true).open(&a.output).with_context(|| name.clone())?;
    let mut f = nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusiveNonblock)
        .map_err(|(_, e)| anyhow::anyhow!("{name}: another sweep is writing this file ({e})"))?;
    let len = f.metadata()?.len();
    if len > 0 {
        let mut last = [0u8];
        f.seek(std::io::SeekFrom::Start(len - 1))?;
        std::io::Read::read_exact(&mut *f, &mut last)?;
        if last[0] != b'\n' {
            let text = std::fs::read(&a.output).with_context(|| name.clone())?;
            let keep = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            f.set_len(keep as u64).with_context(|| name.clone())?;
            eprintln!(
                "warning: {name}: dropped an incomplete last line ({} bytes, from an interrupted write)",
                text.len() - keep
            );
        }
    }
    Ok(f)
}

pub fn sweep(a: SweepArgs, run_streamed: Streamed) -> anyhow::Result<ExitCode> {
    let spec = Spec::load(&a.spec)?;
    let (shard, of) = a.shard.as_deref().map_or(Ok((0, 1)), forefront_sweep::parse_shard)?;
    let all = spec.points()?;
    let output = a.output.display().to_string();
    let mut out = open_output(&a)?;
    let done = forefront_sweep::done_indices(&output, &spec, &all, &forefront_sweep::read_lines(&a.output)?)?;
    let todo: Vec<usize> = (0..all.len()).filter(|i| i % of == shard && !done.contains(i)).collect();
    eprintln!("sweep: {} points, shard {shard}/{of}: {} to run, {} already in {output}", all.len(), todo.len(), done.len());
    // Every point's configuration is checked before the first run.
    let cfgs: Vec<RunConfig> = todo.iter().map(|&i| spec.config(&all[i])).collect::<Result<_, _>>()?;
    let origin = Origin { sweep: spec.id(), shard: (shard, of), points: all.len() };
    let mut failed = 0usize;
    let finished = run_streamed(cfgs, &mut |k, outcome| {
        let i = todo[k];
        let line = match outcome {
            RunOutcome::Report(r) => Line::new(&origin, i, all[i].clone(), &r),
            RunOutcome::Failed(e) => {
                failed += 1;
                eprintln!("sweep: point {i} failed: {e}");
                Line::failed(&origin, i, all[i].clone(), e)
            }
        };
        // One write per line, flushed before the next point is taken: a kill loses at most the
        // runs in flight, never a finished one.
        let mut text = line.to_json();
        text.push('\n');
        out.write_all(text.as_bytes()).with_context(|| output.clone())?;
        out.flush().with_context(|| output.clone())?;
        Ok(())
    })?;
    if !finished {
        let lines = forefront_sweep::read_lines(&a.output)?;
        let ok = lines.iter().filter(|l| l.ok()).count();
        eprintln!("sweep: interrupted; {ok} of {} points are in {output}; run the same command to resume", all.len());
        return Ok(ExitCode::from(130));
    }
    // Every point of this shard ran: the file in its canonical form (index order, one line per
    // point), so it is the same bytes however the sweep was interrupted and resumed.
    let lines = forefront_sweep::finish(&a.output)?;
    drop(out);
    summary(&all, &lines)?;
    if failed > 0 {
        eprintln!("sweep: {failed} point(s) failed (their errors are in {output}); run the same command to retry them");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// Mean FG latency per configuration over its seeds, with a 95 % confidence interval
/// (Student's t), on stdout as a markdown table.
fn summary(all: &[Point], lines: &[Line]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    let failed = lines.iter().filter(|l| !l.ok()).count();
    let failed = if failed > 0 { format!(" ({failed} failed)") } else { String::new() };
    writeln!(out, "{} of {} points done{failed}", lines.iter().filter(|l| l.ok()).count(), all.len())?;
    let variants = all.iter().any(|p| p.variant.is_some());
    let has_axes = !variants || all.iter().any(|p| !p.axes.is_empty());
    let (vh, vs) = if variants { ("variant | ", "---|") } else { ("", "") };
    let (ah, as_) = if has_axes { ("axes | ", "---|") } else { ("", "") };
    writeln!(out, "| device | {vh}{ah}policy | BG apps | seeds | FG mean ms | 95 % CI ± |")?;
    writeln!(out, "|---|{vs}{as_}---|---|---|---|---|")?;
    for s in forefront_sweep::summary(all, lines) {
        let p = &s.point;
        let axes: Vec<String> = p.axes.iter().map(|(k, v)| format!("{k}={v}")).collect();
        // A seed without headline samples has no figure: the mean and interval are `–` then.
        let ci = s.ci95_ms.filter(|c| c.is_finite()).map_or_else(|| "–".to_string(), |c| format!("{c:.1}"));
        let mean = forefront_record::run::or_dash(s.fg_mean_ms, |m| format!("{m:.1}"));
        let variant = p.variant.as_ref().map_or_else(String::new, |v| format!("{v} | "));
        let axes = if has_axes { format!("{} | ", axes.join(" ")) } else { String::new() };
        writeln!(out, "| {} | {variant}{axes}{} | {} | {} | {mean} | {} |", p.device, p.policy, p.bg_apps, s.seeds, ci)?;
    }
    Ok(())
}

pub fn merge(a: MergeArgs) -> anyhow::Result<ExitCode> {
    let inputs: Vec<&std::path::Path> = a.inputs.iter().map(PathBuf::as_path).collect();
    // Checked before reading the inputs: an existing output without --force, or an input.
    let mut out = OutputFile::create(&a.output, a.force, &inputs)?;
    let merged = forefront_sweep::merge(&inputs)?;
    if !merged.complete() {
        if !a.partial {
            bail!("{}: nothing written (pass --partial to write what there is)", merged.describe_gaps());
        }
        eprintln!("warning: {} (--partial: written without them)", merged.describe_gaps());
    }
    let mut text = String::new();
    for l in &merged.lines {
        text.push_str(&l.to_json());
        text.push('\n');
    }
    out.file().write_all(text.as_bytes()).with_context(|| a.output.display().to_string())?;
    out.commit()?;
    eprintln!(
        "merged {} of {} points from {} file(s) into {}",
        merged.lines.iter().filter(|l| l.ok()).count(),
        merged.points,
        a.inputs.len(),
        a.output.display()
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim_cmd::{run_streamed, run_streamed_with};

    /// The simulator, except that every run with seed 2 panics.
    fn seed_two_panics(
        cfgs: Vec<RunConfig>,
        done: &mut dyn FnMut(usize, RunOutcome) -> anyhow::Result<()>,
    ) -> anyhow::Result<bool> {
        run_streamed_with(
            cfgs,
            |c| {
                if c.seed == 2 {
                    panic!("injected failure");
                }
                Ok(forefront_sim::try_run(c)?)
            },
            done,
        )
    }

    #[test]
    fn a_panicking_point_is_recorded_the_others_complete_and_a_resume_retries_it() {
        let d = tempfile::tempdir().unwrap();
        let spec = d.path().join("s.toml");
        std::fs::write(
            &spec,
            "scenario = \"camera-switch\"\npolicies = [\"android\", \"fasttrack\"]\nbg_apps = [1]\nseeds = 3\n[axes]\n\"duration_s\" = [2.0]\n",
        )
        .unwrap();
        let output = d.path().join("out.jsonl");
        let args = || SweepArgs { spec: spec.clone(), output: output.clone(), shard: None };
        assert_eq!(sweep(args(), seed_two_panics).unwrap(), ExitCode::from(1));
        let lines = forefront_sweep::read_lines(&output).unwrap();
        assert_eq!(lines.iter().map(|l| l.index).collect::<Vec<_>>(), [0, 1, 2, 3, 4, 5], "one line per point, in order");
        let failed: Vec<usize> = lines.iter().filter(|l| !l.ok()).map(|l| l.index).collect();
        assert_eq!(failed, [1, 4], "the seed-2 point of each policy");
        assert!(lines[1].error.as_deref().unwrap().contains("the run panicked: injected failure"), "{:?}", lines[1].error);
        // A resume runs the failed points only, and the file ends whole, each point once.
        assert_eq!(sweep(args(), run_streamed).unwrap(), ExitCode::SUCCESS);
        let lines = forefront_sweep::read_lines(&output).unwrap();
        assert_eq!(lines.len(), 6);
        assert!(lines.iter().all(Line::ok));
    }

    #[test]
    fn a_resume_drops_a_torn_last_line_and_refuses_another_sweeps_file() {
        let d = tempfile::tempdir().unwrap();
        let spec = d.path().join("s.toml");
        std::fs::write(
            &spec,
            "scenario = \"camera-switch\"\npolicies = [\"android\"]\nbg_apps = [1]\nseeds = 2\n[axes]\n\"duration_s\" = [2.0]\n",
        )
        .unwrap();
        let output = d.path().join("out.jsonl");
        let args = || SweepArgs { spec: spec.clone(), output: output.clone(), shard: None };
        assert_eq!(sweep(args(), run_streamed).unwrap(), ExitCode::SUCCESS);
        let whole = std::fs::read_to_string(&output).unwrap();
        // A kill in the middle of the second line's write.
        let first = whole.lines().next().unwrap();
        std::fs::write(&output, format!("{first}\n{}", &whole.lines().nth(1).unwrap()[..100])).unwrap();
        assert_eq!(sweep(args(), run_streamed).unwrap(), ExitCode::SUCCESS);
        assert_eq!(std::fs::read_to_string(&output).unwrap(), whole);
        // Another spec's sweep into the same file is refused, and the file is left alone.
        std::fs::write(&spec, "scenario = \"camera-switch\"\npolicies = [\"android\"]\nbg_apps = [1]\nseeds = [7, 8]\n").unwrap();
        let e = sweep(args(), run_streamed).unwrap_err().to_string();
        assert!(e.contains("has lines of another sweep"), "{e}");
        assert_eq!(std::fs::read_to_string(&output).unwrap(), whole);
        // The spec itself is never the output.
        let e = sweep(SweepArgs { spec: spec.clone(), output: spec.clone(), shard: None }, run_streamed).unwrap_err().to_string();
        assert!(e.contains("is also an input"), "{e}");
    }
}
