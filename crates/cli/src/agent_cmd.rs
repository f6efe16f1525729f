//! `forefront agent`: not built yet (see the open issues).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct AgentArgs {}

pub fn run(_args: AgentArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`forefront agent` is not implemented yet")
}
