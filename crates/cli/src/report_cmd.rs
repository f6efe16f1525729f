//! `forefront report`: not built yet (see the open issues).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ReportArgs {}

pub fn run(_args: ReportArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`forefront report` is not implemented yet")
}
