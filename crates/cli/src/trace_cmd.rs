//! `forefront trace`: import, analyse, capture and convert real I/O and syscall traces.
//! Wiring only; the work is in `forefront-trace`.

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::bail;
use clap::{Subcommand, ValueEnum};
use forefront_trace::capture::{capture, CaptureOptions};

use crate::output::OutputFile;
use forefront_trace::perfetto::PerfettoWriter;
use forefront_trace::stats::{render_table, FgSelector, StatsBuilder, TraceNames};
use forefront_trace::{InputFormat, ReadOptions, TraceReader};

#[derive(clap::Args)]
pub struct TraceArgs {
    #[command(subcommand)]
    command: TraceCommand,
}

#[derive(Subcommand)]
enum TraceCommand {
    /// Statistics of a trace: counts per syscall or block action, bytes read/written,
    /// fsync/fdatasync, request sizes, sequential share, per-process and FG/BG split, and
    /// per-layer latencies (queue→dispatch, dispatch→complete) for block traces.
    ///
    /// JSON keys (stable contract): format, records, syscalls (syscall traces), actions and
    /// requests (block traces), bytes_read, bytes_written, fsyncs, seq_fraction.
    Stats(StatsArgs),
    /// Record the block I/O of a workload on DEV as blkparse text (via the ftrace `blk`
    /// tracer; tracefs state is restored afterwards, also on errors and Ctrl-C).
    ///
    /// The workload runs in a process group of its own; the whole group (whatever it started
    /// in the background too) is ended when the workload exits, when --duration is over, and
    /// on Ctrl-C, SIGTERM or SIGHUP.
    ///
    /// Example: forefront trace capture --dev loop0 -o io.txt -- dd if=/dev/zero of=/dev/loop0 bs=4k count=100 oflag=direct
    Capture(CaptureArgs),
    /// Convert a trace to Chrome trace-event JSON for Perfetto (ui.perfetto.dev) or
    /// chrome://tracing: syscall spans on one process per app with a track `app/tid` per
    /// thread, request spans per device queue, queue-depth counters, task slices per CPU. With
    /// --fg the FG app's syscalls, requests and slices are named `FG ...` and coloured green.
    ///
    /// Example: forefront trace convert --fg dd trace.txt trace.json   (or `-` for stdout)
    Convert(ConvertArgs),
}

#[derive(Clone, Copy, ValueEnum)]
enum OutFormat {
    Table,
    Json,
}

#[derive(clap::Args)]
struct InputArgs {
    /// Trace format; `auto` detects it from the content.
    #[arg(long, default_value = "auto", value_parser = ["auto", "blkparse", "blktrace", "strace", "mobigen", "iopro", "ftrace"])]
    input_format: String,
    /// Skip lines that do not parse (and files with no records), counting them as warnings on
    /// stderr, instead of stopping at the first one. A line longer than 1 MiB (not a text
    /// trace: `/dev/zero`, a binary file) still ends the import.
    #[arg(long)]
    lenient: bool,
    /// The foreground app: a process name (strace: the file the process `execve`d, or the
    /// name set with `prctl(PR_SET_NAME)`; blkparse and ftrace: the command name), or a pid/tid
    /// (a number); repeatable. A value that matches nothing in the trace is an error that lists
    /// names the trace has. Without --fg there is no FG/BG split. `sim replay --fg` takes the
    /// same values.
    #[arg(long, value_name = "COMM|PID")]
    fg: Vec<String>,
}

#[derive(clap::Args)]
struct StatsArgs {
    /// Trace files (one trace; several blktrace per-CPU files, or the base name DEV of
    /// DEV.blktrace.N, are merged by time).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    #[command(flatten)]
    input: InputArgs,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: OutFormat,
    /// Processes listed in the table.
    #[arg(long, default_value_t = 15)]
    top: usize,
}

#[derive(clap::Args)]
struct CaptureArgs {
    /// Block device to trace (`loop0`, `/dev/nvme0n1`, `sda1`).
    #[arg(long)]
    dev: String,
    /// Stop after this many seconds (the workload's process group is ended if still running).
    #[arg(long, value_name = "SECONDS")]
    duration: Option<f64>,
    /// Output file (default: stdout). An existing file is kept unless --force.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// Overwrite the output file if it exists.
    #[arg(long)]
    force: bool,
    /// Keep tracing this long after the workload exits, for its last completions.
    #[arg(long, default_value_t = 200, value_name = "MS")]
    settle_ms: u64,
    /// The workload to run while tracing.
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,
}

#[derive(clap::Args)]
struct ConvertArgs {
    /// Input trace file(s), then the output JSON file (kept if it exists, unless --force), or
    /// `-` to write the JSON to stdout.
    #[arg(required = true, value_name = "IN... OUT.json")]
    paths: Vec<PathBuf>,
    /// Overwrite the output file if it exists.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    input: InputArgs,
}

pub fn run(args: TraceArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        TraceCommand::Stats(a) => stats(a),
        TraceCommand::Capture(a) => capture_cmd(a),
        TraceCommand::Convert(a) => convert(a),
    }
}

fn open(files: &[PathBuf], input: &InputArgs) -> anyhow::Result<TraceReader> {
    let format = InputFormat::from_name(&input.input_format).expect("clap checked the value");
    let opts = ReadOptions { format, lenient: input.lenient };
    Ok(TraceReader::open(files, &opts)?)
}

fn report_warnings(reader: &TraceReader) {
    let w = reader.warnings();
    if w.count > 0 {
        eprintln!("warning: {} problem(s) skipped (--lenient); the first ones:", w.count);
        for e in &w.first {
            eprintln!("  {e}");
        }
    }
}

fn stats(a: StatsArgs) -> anyhow::Result<ExitCode> {
    let mut reader = open(&a.files, &a.input)?;
    let mut b = StatsBuilder::new(FgSelector::parse(&a.input.fg));
    for r in &mut reader {
        b.add(&r?);
    }
    report_warnings(&reader);
    let s = b.finish(reader.format());
    // A --fg value that names nothing in the trace is a mistake the split would hide.
    FgSelector::parse(&a.input.fg).check(&TraceNames::of_stats(&s))?;
    let mut out = io::stdout().lock();
    match a.format {
        OutFormat::Json => {
            serde_json::to_writer_pretty(&mut out, &s)?;
            writeln!(out)?;
        }
        OutFormat::Table => out.write_all(render_table(&s, a.top).as_bytes())?,
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn capture_cmd(a: CaptureArgs) -> anyhow::Result<ExitCode> {
    let mut opts = CaptureOptions::new(&a.dev);
    if let Some(d) = a.duration {
        if !(d.is_finite() && d > 0.0) {
            bail!("--duration must be a positive number of seconds");
        }
        opts.duration = Some(Duration::from_secs_f64(d));
    }
    opts.command = a.command;
    opts.settle = Duration::from_millis(a.settle_ms);
    // A wrong --dev (or nothing to run) fails before the output file is created or truncated.
    forefront_trace::capture::check(&opts)?;
    let mut file = a.output.as_deref().map(|p| OutputFile::create(p, a.force, &[])).transpose()?;
    let mut out: Box<dyn Write> = match &mut file {
        Some(f) => Box::new(BufWriter::new(f.file())),
        None => Box::new(BufWriter::new(io::stdout().lock())),
    };
    let s = capture(&opts, &mut out)?;
    out.flush()?;
    drop(out);
    // What was captured is kept, an interrupted capture's included.
    if let Some(f) = file {
        f.commit()?;
    }
    eprintln!(
        "captured {} events on {} ({}) via {}: {} reads and {} writes completed; kernel /sys/class/block/{}/stat delta: {} reads, {} writes{}",
        s.events,
        a.dev,
        s.device,
        s.backend,
        s.completed.reads,
        s.completed.writes,
        opts.dev,
        s.kernel_delta.reads,
        s.kernel_delta.writes,
        if s.completed == s.kernel_delta { " (match)" } else { " (MISMATCH: I/O outside the capture window or lost events)" }
    );
    if s.other_devices > 0 {
        eprintln!("note: {} events of other traced devices were dropped", s.other_devices);
    }
    if s.interrupted {
        eprintln!("interrupted; tracefs restored");
        return Ok(ExitCode::from(130));
    }
    if s.timed_out {
        eprintln!("stopped after --duration");
    }
    match s.exit_status {
        Some(st) if !st.success() && !s.timed_out => {
            eprintln!("workload exited with {st}");
            Ok(ExitCode::from(1))
        }
        _ => Ok(ExitCode::SUCCESS),
    }
}

fn convert(a: ConvertArgs) -> anyhow::Result<ExitCode> {
    // Counted here, not by clap: `num_args = 2..` would make `IN --fg X OUT` two groups of
    // positionals, each needing two values.
    if a.paths.len() < 2 {
        bail!("give the input trace file(s), then the output file (`-` for stdout)");
    }
    let (out_path, inputs) = a.paths.split_last().expect("two paths or more");
    let to_stdout = out_path.as_os_str() == "-";
    // Refused before reading anything: an existing output without --force, or an input.
    let input_paths: Vec<&std::path::Path> = inputs.iter().map(PathBuf::as_path).collect();
    let mut file = if to_stdout { None } else { Some(OutputFile::create(out_path, a.force, &input_paths)?) };
    let fg = FgSelector::parse(&a.input.fg);
    if !fg.is_empty() {
        // Check --fg before writing anything: a pass that only collects names and ids.
        let mut names = TraceNames::default();
        for r in &mut open(inputs, &a.input)? {
            names.add(&r?);
        }
        fg.check(&names)?;
    }
    let mut reader = open(inputs, &a.input)?;
    // A failing input leaves an existing output as it was: the bytes go to a temporary file,
    // renamed over the output only once every record converted.
    let out: Box<dyn Write> = match &mut file {
        None => Box::new(BufWriter::new(io::stdout().lock())),
        Some(f) => Box::new(BufWriter::new(f.file())),
    };
    let mut w = PerfettoWriter::new(out, fg)?;
    let mut n = 0u64;
    for r in &mut reader {
        w.add(&r?)?;
        n += 1;
    }
    report_warnings(&reader);
    let events = w.events;
    drop(w.finish()?);
    if let Some(f) = file {
        f.commit()?;
    }
    let dest = if to_stdout { "stdout".into() } else { out_path.display().to_string() };
    eprintln!("{n} records → {events} trace events in {dest}");
    Ok(ExitCode::SUCCESS)
}
