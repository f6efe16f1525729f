//! `forefront trace`: not built yet (see the open issues).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct TraceArgs {}

pub fn run(_args: TraceArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`forefront trace` is not implemented yet")
}
