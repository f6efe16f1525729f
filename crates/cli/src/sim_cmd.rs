//! `forefront sim`: the simulator's command line.

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct SimArgs {}

pub fn run(_args: SimArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`forefront sim` is not implemented yet")
}
