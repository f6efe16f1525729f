//! `forefront report`: render saved run results as one self-contained HTML page.
//!
//! Wiring only: loading, metrics and rendering live in `forefront-report`.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use forefront_report::{html, input, Named};

use crate::output::OutputFile;

#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  forefront sim run switch-upload --bg-apps 0 --format json > alone.json
  forefront sim run switch-upload --policy android --format json > android.json
  forefront sim run switch-upload --policy fasttrack --format json > fasttrack.json
  forefront report alone.json android.json fasttrack.json -o report.html

The page (inline CSS and SVG, no scripts, no network) has: the runs, a comparison table (FG
mean/p50/p90/p99/max, delay against the FG-only run if one has --bg-apps 0, delay reduction
against android, BG MB/s, device metrics, hooks fired), the FG latency CDF per run, FG/BG
throughput over time with the headline phases shaded, and a per-layer breakdown.

Accepted inputs: the `--format json` output of `sim run`, `sim replay` (one run per device),
`sim` with no subcommand (its runs), `sim compare` (its table, and FG latency and delay
reduction against the BG-app count), `sim cells` (its three tables), `sim interactivity` and
`bench predict` (measured against predicted start-up p50–p90 and background MB/s per bench
mode), and the JSON Lines file of `sim sweep` / `sim merge` (one run per line). JSON of other commands
(`bench`, `trace stats`, `agent check`/`status`, `sim validate`) is refused with a message naming
the command that wrote it.")]
pub struct ReportArgs {
    /// Saved results, one per file (`-` reads one from stdin): `forefront sim run|replay|compare|
    /// cells|interactivity --format json` or `forefront bench predict --format json` output, or a
    /// `sim sweep` JSON Lines file.
    #[arg(required = true, value_name = "RUN.json")]
    inputs: Vec<PathBuf>,
    /// The HTML file to write; `-` writes the page to stdout.
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// Overwrite the output file if it exists.
    #[arg(long)]
    force: bool,
    /// Page title (default: "forefront report: " and the scenario names).
    #[arg(long)]
    title: Option<String>,
}

pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let to_stdout = args.output == Path::new("-");
    // Refused before reading anything: an existing output without --force, or an input.
    let paths: Vec<&Path> = args.inputs.iter().map(PathBuf::as_path).collect();
    let file = if to_stdout { None } else { Some(OutputFile::create(&args.output, args.force, &paths)?) };
    let mut inputs = Vec::with_capacity(args.inputs.len());
    let mut stdin_used = false;
    for path in &args.inputs {
        let value = if path == Path::new("-") {
            anyhow::ensure!(!stdin_used, "`-` (stdin) given more than once");
            stdin_used = true;
            let mut text = String::new();
            std::io::stdin().take(input::MAX_BYTES + 1).read_to_string(&mut text).context("reading stdin")?;
            anyhow::ensure!(
                text.len() as u64 <= input::MAX_BYTES,
                "<stdin>: more than {} MiB: not a saved result",
                input::MAX_BYTES >> 20
            );
            input::parse(Path::new("<stdin>"), &text)?
        } else {
            input::load(path)?
        };
        inputs.push(Named { name: path.display().to_string(), value });
    }
    let page = html::render(&inputs, &html::Options { title: args.title });
    let Some(mut file) = file else {
        let mut out = std::io::stdout().lock();
        out.write_all(page.as_bytes())?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    };
    file.file().write_all(page.as_bytes()).with_context(|| format!("writing {}", args.output.display()))?;
    file.commit()?;
    eprintln!("wrote {} ({} input(s), {} KiB)", args.output.display(), inputs.len(), page.len().div_ceil(1024));
    Ok(ExitCode::SUCCESS)
}
