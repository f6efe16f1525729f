//! `forefront generate`: the man pages and shell completions, made from the CLI's own
//! definition (clap_mangen, clap_complete), so they never drift from `--help`. The package
//! build (`scripts/test-deb`) runs it; nothing generated is checked in.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, CommandFactory, Subcommand};

#[derive(Args)]
pub struct GenerateArgs {
    #[command(subcommand)]
    what: What,
}

#[derive(Subcommand)]
enum What {
    /// Write a man page per command and subcommand (`forefront.1`, `forefront-agent.1`,
    /// `forefront-agent-run.1`, ...) into DIR.
    Man {
        /// Output directory (created if missing).
        dir: PathBuf,
    },
    /// Write the completion script of SHELL to stdout (bash, zsh, fish, elvish, powershell).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

pub fn run(args: GenerateArgs) -> anyhow::Result<ExitCode> {
    let cmd = crate::Cli::command();
    match args.what {
        What::Man { dir } => {
            std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
            clap_mangen::generate_to(cmd, &dir).with_context(|| format!("cannot write the man pages into {}", dir.display()))?;
        }
        What::Completions { shell } => {
            use std::io::Write;
            // Into a buffer first: clap_complete panics on a write error (a closed pipe), which
            // `main` must see as an error to exit quietly.
            let (mut cmd, mut buf) = (cmd, vec![]);
            clap_complete::generate(shell, &mut cmd, "forefront", &mut buf);
            let mut out = std::io::stdout().lock();
            out.write_all(&buf)?;
            out.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
