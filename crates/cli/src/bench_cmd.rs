//! `forefront bench`: not built yet (see the open issues).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct BenchArgs {}

pub fn run(_args: BenchArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`forefront bench` is not implemented yet")
}
