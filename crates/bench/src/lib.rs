//! `forefront bench`: foreground launch/switch latency under real background load, on a real
//! file system, with and without the agent.
//!
//! - [`fixture`]: the app (code and resource files, a real SQLite database) and background
//!   files, all fully written ([`fixture::App`], [`fixture::AppSpec`]).
//! - [`ops`]: the foreground operations ([`ops::launch`], [`ops::switch`]) and the background
//!   workloads ([`ops::update_forever`], [`ops::upload_forever`]; the S suite's fio-style
//!   [`ops::seq_read_forever`], [`ops::seq_write_forever`] and its [`ops::sync_loop_forever`]).
//! - [`replay`]: a real application's start-up I/O replayed from a trace in the S suite's
//!   format (`--fg replay --trace FILE`), as the suite's `replay-startup-io` does.
//! - [`runner`]: modes ([`runner::Mode`]) interleaved by round ([`runner::schedule`]), the
//!   background restarted for each sample after a discarded warm-up or kept running across a
//!   round's start-ups as the S suite keeps it ([`runner::BgLife`]), caches dropped before each
//!   operation ([`runner::run`] → [`runner::Report`]).
//! - [`calibrate`]: `bench calibrate`, the disk measured through the kernel as a device file
//!   of the simulator ([`calibrate::calibrate`] → [`calibrate::Calibration`]).
//! - [`loopdev`]: an ext4 image on a loop device, for an isolated run.
//! - [`stats`]: median with its distribution-free 95 % interval, IQR, min, max.
//! - [`render`]: the table and the JSON contract.
//!
//! ```no_run
//! use forefront_bench::runner::{run, Bg, Fg, Mode, Plan};
//! let plan = Plan {
//!     fg: Fg::Launch, bg: Bg::Update, runs: 3, modes: Mode::ALL.to_vec(),
//!     dir: "/var/tmp".into(), keep: false, bg_procs: 2, bg_file_bytes: 1 << 30,
//!     ramp: std::time::Duration::from_millis(1500), app: Default::default(),
//!     exe: std::env::current_exe().unwrap(), launcher: forefront_bench::runner::Launcher::Socket,
//!     agent_extra: String::new(), trace: None, replay_think: false, fio_overwrite: false,
//!     bg_life: forefront_bench::runner::BgLife::PerSample,
//! };
//! let report = run(&plan, &mut |_| {})?;
//! print!("{}", forefront_bench::render::table(&report));
//! # Ok::<(), forefront_bench::runner::BenchError>(())
//! ```

pub mod calibrate;
pub mod fixture;
pub mod interrupt;
pub mod loopdev;
pub mod ops;
pub mod render;
pub mod replay;
pub mod runner;
pub mod stats;
