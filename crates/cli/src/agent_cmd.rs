//! `forefront agent`: run the foreground-first daemon, or talk to it like a launcher does.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::{Args, Subcommand, ValueEnum};
use forefront_agent::{check, config::Config, control, proto::Request};

#[derive(Args)]
#[command(after_help = "Configuration: /etc/forefront/agent.toml by default; `forefront agent config` prints \
every key with its default. See docs/agent.md.")]
pub struct AgentArgs {
    #[command(subcommand)]
    command: AgentCommand,
}

#[derive(Args, Clone)]
struct ConfigArg {
    /// Agent configuration (TOML). Missing default file = built-in defaults.
    #[arg(long, short, value_name = "FILE")]
    config: Option<PathBuf>,
}

#[derive(Args, Clone)]
struct SocketArgs {
    #[command(flatten)]
    config: ConfigArg,
    /// Control socket (default: `agent.socket` from the config).
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Table,
    Json,
}

#[derive(Subcommand)]
enum AgentCommand {
    /// Run the agent (until SIGTERM/SIGINT; then every changed knob is restored).
    Run(ConfigArg),
    /// Name the foreground app (a process and its descendants, a uid or a cgroup); with
    /// --burst, pause background work while it launches or switches; --burst-end resumes it.
    Fg(FgArgs),
    /// Make a whole cell (a virtual phone: `[cells]` in the config, a cgroup subtree)
    /// foreground: its processes get the foreground class, every other cell's the background
    /// class; with --burst, pause the background as `fg --burst` does.
    Cell {
        /// The cell's name in `[cells]`.
        name: String,
        #[arg(long)]
        burst: bool,
        #[command(flatten)]
        socket: SocketArgs,
    },
    /// Add processes to those the agent manages at run time (on top of the config's
    /// `[scope]`): a process and its descendants, a uid or a cgroup. A managed process that is
    /// not foreground is background. --remove takes them out again (their knobs are restored).
    ///
    /// Example: forefront agent scope $(pgrep -o rsync)      # rsync and its children: background
    #[command(verbatim_doc_comment)]
    Scope {
        /// Process id (its descendants follow).
        #[arg(required_unless_present_any = ["uid", "cgroup"], conflicts_with_all = ["uid", "cgroup"])]
        pid: Option<i32>,
        #[arg(long, conflicts_with = "cgroup")]
        uid: Option<u32>,
        /// A cgroup path (in the hierarchy holding `cpu`).
        #[arg(long)]
        cgroup: Option<String>,
        #[arg(long)]
        remove: bool,
        #[command(flatten)]
        socket: SocketArgs,
    },
    /// The launcher's fast path: name this process foreground (with --burst, pause the
    /// background), then exec CMD in its place — same pid, so the app's whole start-up, from
    /// its first instruction, runs foreground. If the agent cannot be reached (or does not
    /// answer within 2 s) the command still runs (a warning on stderr): a launch never fails
    /// because of the agent. Launchers should exec the small helper `forefront-exec` instead
    /// (same options and request, a 0.5 MB binary, cheaper from cold caches; docs/agent.md).
    ///
    /// Example: forefront agent exec --burst -- firefox
    ///          forefront-exec --burst -- firefox       # the same, for launchers
    #[command(verbatim_doc_comment)]
    Exec {
        /// Pause background work while it starts (end it with `forefront agent fg --burst-end`;
        /// otherwise the pause ends once the app's I/O has been quiet for `pause.idle_end_ms`,
        /// or at `pause.max_ms`).
        #[arg(long)]
        burst: bool,
        #[command(flatten)]
        socket: SocketArgs,
        /// The command and its arguments.
        #[arg(last = true, required = true, value_name = "CMD")]
        command: Vec<String>,
    },
    /// Show classes, members, paused state and every knob the agent changed.
    Status {
        #[command(flatten)]
        socket: SocketArgs,
        #[arg(long, value_enum, default_value = "table")]
        format: Format,
    },
    /// List every kernel capability the configured actions need and whether it is here.
    Check {
        #[command(flatten)]
        config: ConfigArg,
        #[arg(long, value_enum, default_value = "table")]
        format: Format,
    },
    /// Undo what a crashed agent left (reads the state file); for `ExecStopPost=`. A state file
    /// or directory anybody but root could have written, or an entry naming anything the agent
    /// does not change, is refused and nothing is restored; so is a state file a running agent
    /// holds (its lock, `<state>.lock`, names the agent's pid).
    Restore(ConfigArg),
    /// Print the default configuration, every key documented in docs/agent.md.
    Config,
    /// Print the D-Bus system bus policy allowing what the config's `[control]` allows (the
    /// package installs the default one as
    /// /usr/share/dbus-1/system.d/org.forefront.Agent1.conf).
    DbusPolicy(ConfigArg),
    /// (internal) The watchdog the agent starts: thaws GROUPs when its stdin closes or a pause
    /// outlives its deadline; when the agent died (its stdin closed without `X`), restores what
    /// the agent's journal lists, as `agent restore` does.
    #[command(hide = true)]
    Watchdog {
        /// `v1:/sys/fs/cgroup/freezer/forefront/bg` or `v2:/sys/fs/cgroup/forefront/bg`.
        #[arg(long = "group")]
        groups: Vec<String>,
        /// The agent's journal (`agent.state`), restored after the agent's death.
        #[arg(long, requires_all = ["agent_group", "agent_pid"])]
        journal: Option<PathBuf>,
        /// The agent's `agent.root`.
        #[arg(long, default_value = "/")]
        root: PathBuf,
        /// The agent's `agent.group` (bounds what its journal may name).
        #[arg(long)]
        agent_group: Option<String>,
        /// The agent's pid: its journal lock is waited for as the kernel drops it.
        #[arg(long)]
        agent_pid: Option<u32>,
        /// Lock the watchdog's pages in memory (the agent's `agent.lock_memory`): its code for
        /// a pause's `F` line must not be read from the disk beside a launch.
        #[arg(long)]
        lock_memory: bool,
    },
}

#[derive(Args)]
struct FgArgs {
    /// Process id of the foreground app (its threads and children follow).
    #[arg(required_unless_present_any = ["uid", "cgroup", "burst_end"], conflicts_with_all = ["uid", "cgroup"])]
    pid: Option<i32>,
    /// Every process of this uid is foreground (Android-style one uid per app).
    #[arg(long, conflicts_with = "cgroup")]
    uid: Option<u32>,
    /// Every process in this cgroup (path in the hierarchy holding `cpu`) is foreground.
    #[arg(long)]
    cgroup: Option<String>,
    /// A launch or switch begins: pause background work (bounded by `pause.max_ms`).
    #[arg(long, conflicts_with = "burst_end")]
    burst: bool,
    /// The launch or switch is over: resume background work now.
    #[arg(long)]
    burst_end: bool,
    #[command(flatten)]
    socket: SocketArgs,
}

const DEFAULT_CONFIG: &str = "/etc/forefront/agent.toml";

fn load(arg: &ConfigArg) -> anyhow::Result<Config> {
    match &arg.config {
        Some(p) => Ok(Config::load(p)?),
        None if std::path::Path::new(DEFAULT_CONFIG).exists() => Ok(Config::load(DEFAULT_CONFIG.as_ref())?),
        None => Ok(Config::default()),
    }
}

fn socket_of(s: &SocketArgs) -> anyhow::Result<PathBuf> {
    Ok(match &s.socket {
        Some(p) => p.clone(),
        None => load(&s.config)?.agent.socket,
    })
}

fn call(socket: &std::path::Path, req: Request) -> anyhow::Result<forefront_agent::proto::Response> {
    let r = control::request(socket, &req).with_context(|| "is `forefront agent run` running?")?;
    if !r.ok {
        bail!("agent refused: {}", r.error.unwrap_or_default());
    }
    Ok(r)
}

pub fn run(args: AgentArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        AgentCommand::Run(c) => {
            let cfg = load(&c)?;
            let exe = std::env::current_exe().context("cannot find the forefront binary for the watchdog")?;
            let ran = forefront_agent::run(cfg, Some(&exe), forefront_agent::daemon::stderr_log);
            // The log's last lines (what the shutdown restored) before the process exits.
            forefront_agent::log::flush(std::time::Duration::from_secs(2));
            ran?;
            Ok(ExitCode::SUCCESS)
        }
        AgentCommand::Fg(a) => {
            let socket = socket_of(&a.socket)?;
            let r = if a.burst_end {
                if a.pid.is_some() || a.uid.is_some() || a.cgroup.is_some() {
                    // Name the foreground first (no burst), then end the pause.
                    call(&socket, Request::Fg { pid: a.pid, uid: a.uid, cgroup: a.cgroup, burst: false })?;
                }
                call(&socket, Request::BurstEnd {})?
            } else {
                call(&socket, Request::Fg { pid: a.pid, uid: a.uid, cgroup: a.cgroup, burst: a.burst })?
            };
            writeln!(std::io::stdout(), "{}", r.message.unwrap_or_default())?;
            Ok(ExitCode::SUCCESS)
        }
        AgentCommand::Exec { burst, socket, command } => {
            use std::os::unix::process::CommandExt;
            let pid = std::process::id() as i32;
            // The same request and wait as `forefront-exec`, the small helper launchers should
            // exec instead of this 11 MB binary (see its crate docs).
            let req = Request::Fg { pid: Some(pid), uid: None, cgroup: None, burst };
            let named = socket_of(&socket).and_then(|s| {
                let r = control::request_within(&s, &req, forefront_agent::proto::client::EXEC_TIMEOUT)
                    .with_context(|| "is `forefront agent run` running?")?;
                if !r.ok {
                    bail!("agent refused: {}", r.error.unwrap_or_default());
                }
                Ok(r)
            });
            if let Err(e) = named {
                eprintln!("warning: forefront agent exec: running {} without the agent: {}", command[0], crate::error_text(&e));
            }
            // Only returns on failure.
            let err = std::process::Command::new(&command[0]).args(&command[1..]).exec();
            Err(anyhow::anyhow!("cannot run {}: {err}", command[0]))
        }
        AgentCommand::Scope { pid, uid, cgroup, remove, socket } => {
            let r = call(&socket_of(&socket)?, Request::Scope { pid, uid, cgroup, remove })?;
            println!("{}", r.message.unwrap_or_default());
            Ok(ExitCode::SUCCESS)
        }
        AgentCommand::Cell { name, burst, socket } => {
            let r = call(&socket_of(&socket)?, Request::Cell { name, burst })?;
            writeln!(std::io::stdout(), "{}", r.message.unwrap_or_default())?;
            Ok(ExitCode::SUCCESS)
        }
        AgentCommand::Status { socket, format } => {
            let r = call(&socket_of(&socket)?, Request::Status {})?;
            let st = r.status.unwrap_or_default();
            let mut out = std::io::stdout().lock();
            match format {
                Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&st)?)?,
                Format::Table => print_status(&mut out, &st)?,
            }
            Ok(ExitCode::SUCCESS)
        }
        AgentCommand::Check { config, format } => {
            let cfg = load(&config)?;
            let caps = check::check(&cfg);
            let mut out = std::io::stdout().lock();
            match format {
                Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&caps)?)?,
                Format::Table => {
                    for c in &caps {
                        let tag = match (c.ok, c.warn) {
                            (false, _) => "MISS",
                            (true, true) => "warn",
                            (true, false) => "ok",
                        };
                        writeln!(out, "{tag:<5} {:<22} {}", c.name, c.detail)?;
                    }
                }
            }
            let missing = caps.iter().filter(|c| !c.ok).count();
            if missing > 0 {
                eprintln!("{missing} capability(ies) missing: the matching actions will be off");
                return Ok(ExitCode::from(1));
            }
            Ok(ExitCode::SUCCESS)
        }
        AgentCommand::Restore(c) => {
            let cfg = load(&c)?;
            // Held while restoring: a journal a running agent writes is its own to restore. One
            // a dead agent's watchdog is restoring is waited for (then usually nothing is left).
            let _lock = forefront_agent::state::JournalLock::acquire_waiting(
                &cfg.agent.state,
                false,
                true,
                forefront_agent::watchdog::LOCK_WAIT,
                |_| false,
            )?;
            match forefront_agent::state::Journal::open_existing(&cfg.agent.state, &cfg.agent.root, &cfg.agent.group)? {
                None => writeln!(std::io::stdout(), "nothing to restore ({} absent)", cfg.agent.state.display())?,
                Some(j) => {
                    let n = j.entries().len();
                    let problems = j.restore();
                    for p in &problems {
                        eprintln!("restore: {p}");
                    }
                    // The restore is done: a reader gone (broken pipe) must not hide its problems' status.
                    let said = writeln!(std::io::stdout(), "restored {n} change(s), {} problem(s)", problems.len());
                    if let Err(e) = said {
                        if e.kind() != std::io::ErrorKind::BrokenPipe || problems.is_empty() {
                            return Err(e.into());
                        }
                    }
                    if !problems.is_empty() {
                        return Ok(ExitCode::from(1));
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        AgentCommand::Config => {
            // write!, not print!: a closed pipe is an error `main` turns into a quiet exit.
            let mut out = std::io::stdout().lock();
            out.write_all(toml::to_string(&Config::default())?.as_bytes())?;
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        AgentCommand::DbusPolicy(c) => {
            let cfg = load(&c)?;
            let mut out = std::io::stdout().lock();
            out.write_all(forefront_agent::dbus::policy(&cfg.control).as_bytes())?;
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        AgentCommand::Watchdog { groups, journal, root, agent_group, agent_pid, lock_memory } => {
            if lock_memory {
                if let Err(e) = forefront_agent::pin::lock_self() {
                    forefront_agent::daemon::stderr_log(&format!("watchdog: lock_memory: not locked: {e}"));
                }
            }
            use forefront_sysfs::{Cgroup, Version};
            let groups = groups
                .iter()
                .map(|g| match g.split_once(':') {
                    Some(("v1", p)) => Ok(Cgroup::new(p, Version::V1)),
                    Some(("v2", p)) => Ok(Cgroup::new(p, Version::V2)),
                    _ => bail!("--group {g:?}: expected v1:PATH or v2:PATH"),
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            // Outlive the agent: a Ctrl-C in its terminal or a SIGTERM/SIGHUP to its process
            // group must not take the watchdog with it. It exits when its stdin closes.
            use nix::sys::signal::{signal, SigHandler, Signal};
            for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
                // SAFETY: ignoring a signal installs no handler code.
                unsafe { signal(s, SigHandler::SigIgn) }?;
            }
            let exit = forefront_agent::watchdog::run(std::io::stdin(), &groups, forefront_agent::daemon::stderr_log);
            if let (forefront_agent::watchdog::Exit::AgentGone, Some(journal), Some(group), Some(pid)) =
                (exit, journal, agent_group, agent_pid)
            {
                forefront_agent::watchdog::restore_left(&journal, &root, &group, pid, forefront_agent::daemon::stderr_log);
            }
            forefront_agent::log::flush(std::time::Duration::from_secs(2));
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn print_status(out: &mut impl Write, st: &serde_json::Value) -> std::io::Result<()> {
    writeln!(out, "agent pid {}  watchdog pid {}", st["pid"], st["watchdog_pid"])?;
    writeln!(out, "foreground: {}", st["foreground"])?;
    if let Some(f) = st.get("focus").filter(|f| !f.is_null()) {
        writeln!(
            out,
            "focus: window {} pid {} (via {}), {} ms ago: {}",
            f["window"],
            f["pid"],
            f["via"].as_str().unwrap_or(""),
            f["ms_ago"],
            f["outcome"].as_str().unwrap_or("")
        )?;
    }
    match st["paused"].get("ms_left") {
        Some(ms) => writeln!(out, "background: PAUSED ({ms} ms left)")?,
        None => writeln!(out, "background: running")?,
    }
    for class in ["foreground", "interactive", "background"] {
        let members = st["classes"][class].as_array().cloned().unwrap_or_default();
        let list: Vec<String> = members.iter().map(|m| format!("{}({})", m["pid"], m["comm"].as_str().unwrap_or(""))).collect();
        writeln!(out, "{class:<12} {:>3}  {}", list.len(), list.join(" "))?;
    }
    writeln!(out, "actions:")?;
    for a in st["actions"].as_array().into_iter().flatten() {
        writeln!(out, "  {}", a.as_str().unwrap_or(""))?;
    }
    writeln!(out, "knobs set:")?;
    for k in st["knobs"].as_array().into_iter().flatten() {
        writeln!(out, "  {} = {}", k["path"].as_str().unwrap_or(""), k["value"].as_str().unwrap_or(""))?;
    }
    let changes = st["changes"].as_array().cloned().unwrap_or_default();
    writeln!(out, "changes recorded for restore: {}", changes.len())?;
    for c in &changes {
        let line = match c["kind"].as_str() {
            Some("created") => format!("  created  {}", c["dir"].as_str().unwrap_or("")),
            Some("knob") => format!("  knob     {} (was {})", c["path"].as_str().unwrap_or(""), c["original"]),
            Some("subtree") => format!("  enabled  {} in {}", c["added"], c["path"].as_str().unwrap_or("")),
            Some("moved") => format!("  moved    pid {} from {}", c["pid"], c["original"].as_str().unwrap_or("")),
            Some("ioprio") => format!("  ioprio   tid {} (was class {})", c["tid"], c["original"]["class"]),
            Some("frozen") => format!("  frozen   {}", c["dir"].as_str().unwrap_or("")),
            _ => format!("  {c}"),
        };
        writeln!(out, "{line}")?;
    }
    Ok(())
}
