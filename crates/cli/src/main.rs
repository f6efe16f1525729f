//! `forefront`: keep the foreground app fast while background apps do I/O and CPU work.
//!
//! This binary only parses flags and wires the library crates together; each face of the tool
//! lives in its own module: [`sim_cmd`] (the simulator), [`agent_cmd`] and [`bench_cmd`] (the
//! real-kernel agent and its benchmark), [`trace_cmd`] and [`report_cmd`] (traces and reports),
//! [`generate_cmd`] (man pages and shell completions).
//! Data goes to stdout, logs to stderr; a broken pipe exits 0; an error is one line on stderr
//! (each cause once) and exit status 2.

mod agent_cmd;
mod bench_cmd;
mod generate_cmd;
mod output;
mod report_cmd;
mod sim_cells;
mod sim_cmd;
mod sim_sweep;
mod sim_ui;
mod sim_validate;
mod trace_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "forefront", version)]
/// Keep the foreground app fast while background apps do I/O and CPU work.
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate a phone's whole stack (CPU, page cache, journal, block layer, flash) under
    /// foreground-first policies. With no subcommand: the default scenario under every policy.
    Sim(sim_cmd::SimArgs),
    /// Run or control the foreground-first agent on this (real) Linux kernel.
    Agent(agent_cmd::AgentArgs),
    /// Measure foreground launch/switch latency under real background load on this machine.
    Bench(bench_cmd::BenchArgs),
    /// Import, analyse, capture and convert real I/O and syscall traces.
    Trace(trace_cmd::TraceArgs),
    /// Render saved run results as a self-contained HTML report.
    Report(report_cmd::ReportArgs),
    /// Write the man pages or a shell's completion script (made from this CLI's definition).
    Generate(generate_cmd::GenerateArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Sim(args) => sim_cmd::run(args),
        Command::Agent(args) => agent_cmd::run(args),
        Command::Bench(args) => bench_cmd::run(args),
        Command::Trace(args) => trace_cmd::run(args),
        Command::Report(args) => report_cmd::run(args),
        Command::Generate(args) => generate_cmd::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {}", error_text(&err));
            ExitCode::from(2)
        }
    }
}

/// The error and its causes on one line, each cause once: many error types already quote their
/// cause in their own message (`{path}: {source}`) and keep it as `source()` for programs, so
/// a cause whose text the message so far contains is not repeated.
pub(crate) fn error_text(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let s = cause.to_string();
        if text.is_empty() {
            text = s;
        } else if !text.contains(&s) {
            text.push_str(": ");
            text.push_str(&s);
        }
    }
    text
}

/// A reader that closed our stdout early (`forefront sim | head`) is not an error. The
/// serialisers wrap the write error in their own type (`serde_json::Error`, `csv::Error`), whose
/// `source()` skips the `io::Error` itself, so those are unwrapped here.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    use std::io::ErrorKind::BrokenPipe;
    err.chain().any(|cause| {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return io.kind() == BrokenPipe;
        }
        if let Some(j) = cause.downcast_ref::<serde_json::Error>() {
            return j.io_error_kind() == Some(BrokenPipe);
        }
        if let Some(c) = cause.downcast_ref::<csv::Error>() {
            return matches!(c.kind(), csv::ErrorKind::Io(io) if io.kind() == BrokenPipe);
        }
        false
    })
}
