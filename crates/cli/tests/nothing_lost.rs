//! Nothing the user has is lost: a sweep keeps every finished point through SIGKILL and SIGINT
//! and resumes the rest; a merge refuses shards of different sweeps and says what is missing;
//! an output that fails half-way leaves the old file as it was; an input is never an output;
//! endless inputs (`/dev/zero`, `/dev/full`) end at once with an error.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_forefront")
}

fn forefront(args: &[&str]) -> std::process::Output {
    Command::new(bin()).args(args).output().expect("run forefront")
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Forty points of a camera switch (seeds 1..=40): long enough (a few hundred ms on two cores)
/// for a signal to land in the middle.
const SPEC: &str =
    "scenario = \"camera-switch\"\npolicies = [\"android\"]\nbg_apps = [1]\nseeds = 40\n[axes]\n\"duration_s\" = [15.0]\n";
const POINTS: usize = 40;

/// The complete lines of `path` (each ends with a newline).
fn complete_lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.split_inclusive('\n').filter(|l| l.ends_with('\n')).map(str::to_owned).collect()
}

/// Start a sweep of `spec` into `out` and wait until it has written `n` lines.
fn sweep_until(spec: &Path, out: &Path, n: usize) -> std::process::Child {
    let child = Command::new(bin())
        .args(["sim", "sweep", spec.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the sweep");
    let t0 = Instant::now();
    while complete_lines(out).len() < n {
        assert!(t0.elapsed() < Duration::from_secs(120), "the sweep wrote fewer than {n} lines in 120 s");
        std::thread::sleep(Duration::from_millis(2));
    }
    child
}

fn indices(lines: &[String]) -> Vec<u64> {
    lines.iter().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["index"].as_u64().unwrap()).collect()
}

#[test]
fn a_sweep_killed_with_sigkill_keeps_every_finished_point_and_resumes_the_rest() {
    let d = tempfile::tempdir().unwrap();
    let spec = d.path().join("spec.toml");
    std::fs::write(&spec, SPEC).unwrap();
    let whole = d.path().join("whole.jsonl");
    let o = forefront(&["sim", "sweep", spec.to_str().unwrap(), "-o", whole.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));

    let out = d.path().join("killed.jsonl");
    let mut child = sweep_until(&spec, &out, 3);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    let kept = complete_lines(&out);
    assert!(kept.len() >= 3 && kept.len() < POINTS, "{} lines kept", kept.len());
    for l in &kept {
        let v: serde_json::Value = serde_json::from_str(l).expect("every kept line is whole JSON");
        assert!(v["report"]["metrics"].is_object(), "a finished point's line holds its report");
    }
    // The resume runs only what is missing and ends with the bytes of an uninterrupted sweep.
    let done = indices(&kept).len();
    let again = forefront(&["sim", "sweep", spec.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(stderr(&again).contains(&format!("{} to run, {done} already", POINTS - done)), "{}", stderr(&again));
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&whole).unwrap());
}

#[test]
fn sigint_ends_a_sweep_at_once_with_what_it_wrote() {
    let d = tempfile::tempdir().unwrap();
    let spec = d.path().join("spec.toml");
    std::fs::write(&spec, SPEC).unwrap();
    let out = d.path().join("int.jsonl");
    let child = sweep_until(&spec, &out, 1);
    let t0 = Instant::now();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let o = child.wait_with_output().unwrap();
    let took = t0.elapsed();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(stderr(&o).contains("interrupted;") && stderr(&o).contains("run the same command to resume"), "{}", stderr(&o));
    assert!(took < Duration::from_secs(5), "SIGINT took {took:?} to end the sweep");
    let kept = complete_lines(&out);
    assert!(!kept.is_empty() && kept.len() < POINTS, "{} lines kept", kept.len());
    assert_eq!(std::fs::read_to_string(&out).unwrap(), kept.concat(), "no torn line");
}

#[test]
fn merge_refuses_mixed_specs_missing_files_and_missing_shards_unless_partial() {
    let d = tempfile::tempdir().unwrap();
    let p = |f: &str| d.path().join(f).to_str().unwrap().to_owned();
    let small =
        "scenario = \"camera-switch\"\npolicies = [\"android\"]\nbg_apps = [1]\nseeds = 6\n[axes]\n\"duration_s\" = [2.0]\n";
    std::fs::write(p("a.toml"), small).unwrap();
    std::fs::write(p("b.toml"), small.replace("[2.0]", "[2.5]")).unwrap();
    for (spec, i) in [("a", 0), ("a", 1), ("b", 2)] {
        let o = forefront(&[
            "sim",
            "sweep",
            &p(&format!("{spec}.toml")),
            "-o",
            &p(&format!("{spec}{i}.jsonl")),
            "--shard",
            &format!("{i}/3"),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    // Shards of two different specs.
    let m = forefront(&["sim", "merge", &p("a0.jsonl"), &p("a1.jsonl"), &p("b2.jsonl"), "-o", &p("m.jsonl")]);
    assert_eq!(m.status.code(), Some(2));
    assert!(stderr(&m).contains("not shards of one sweep"), "{}", stderr(&m));
    // A misspelt input is an error, not an empty shard.
    let m = forefront(&["sim", "merge", &p("a0.jsonl"), &p("a1.jsonl"), &p("a2.jsonl"), "-o", &p("m.jsonl")]);
    assert_eq!(m.status.code(), Some(2));
    assert!(stderr(&m).contains("a2.jsonl: No such file"), "{}", stderr(&m));
    // A missing shard: refused, naming the points and the shard.
    let m = forefront(&["sim", "merge", &p("a0.jsonl"), &p("a1.jsonl"), "-o", &p("m.jsonl")]);
    assert_eq!(m.status.code(), Some(2));
    let e = stderr(&m);
    assert!(e.contains("2 of 6 points missing (2, 5)") && e.contains("no line at all from shard(s) 2/3"), "{e}");
    assert!(!Path::new(&p("m.jsonl")).exists(), "nothing written");
    // --partial writes what there is, and says what is missing.
    let m = forefront(&["sim", "merge", &p("a0.jsonl"), &p("a1.jsonl"), "-o", &p("m.jsonl"), "--partial"]);
    assert!(m.status.success(), "{}", stderr(&m));
    assert!(stderr(&m).contains("2 of 6 points missing"), "{}", stderr(&m));
    assert_eq!(complete_lines(Path::new(&p("m.jsonl"))).len(), 4);
    // The merge's output is never one of its inputs, even with --force.
    let m = forefront(&["sim", "merge", &p("a0.jsonl"), &p("a1.jsonl"), "-o", &p("a0.jsonl"), "--force", "--partial"]);
    assert_eq!(m.status.code(), Some(2));
    assert!(stderr(&m).contains("is also an input"), "{}", stderr(&m));
}

#[test]
fn a_failing_convert_leaves_the_old_output_intact_and_no_temporary_file() {
    let d = tempfile::tempdir().unwrap();
    let good =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/traces/sample.blkparse.txt")).unwrap();
    let mut bad: String = good.lines().take(20).map(|l| format!("{l}\n")).collect();
    bad.push_str("  8,0    0       21     0.000009999   100  Q   R not-a-sector + 8 [fio]\n");
    let input = d.path().join("bad.blkparse.txt");
    std::fs::write(&input, bad).unwrap();
    let out = d.path().join("out.json");
    std::fs::write(&out, "the old output").unwrap();
    let o = forefront(&["trace", "convert", input.to_str().unwrap(), out.to_str().unwrap(), "--force"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bad.blkparse.txt:21"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "the old output");
    let names: Vec<String> =
        std::fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names.len(), 2, "no temporary file left: {names:?}");
}

#[test]
fn an_input_is_never_overwritten_even_with_force() {
    let d = tempfile::tempdir().unwrap();
    let sc = d.path().join("sc.toml");
    let text = include_str!("../../../scenarios/camera-switch.toml");
    std::fs::write(&sc, text).unwrap();
    let s = sc.to_str().unwrap();
    let o = forefront(&["sim", "run", s, "--bg-apps", "0", "--trace-out", s, "--force"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("is also an input"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&sc).unwrap(), text);
    // `report IN -o IN --force`, through another name for the same file.
    let run = d.path().join("run.json");
    let r = forefront(&["sim", "run", "camera-switch", "--bg-apps", "0", "--format", "json"]);
    std::fs::write(&run, &r.stdout).unwrap();
    let link = d.path().join("link.json");
    std::fs::hard_link(&run, &link).unwrap();
    let o = forefront(&["report", run.to_str().unwrap(), "-o", link.to_str().unwrap(), "--force"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("is also an input"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&run).unwrap(), r.stdout);
}

#[test]
fn endless_and_special_files_end_at_once_with_an_error() {
    let d = tempfile::tempdir().unwrap();
    let spec = d.path().join("spec.toml");
    std::fs::write(&spec, SPEC).unwrap();
    let html = d.path().join("r.html");
    let merged = d.path().join("m.jsonl");
    let big = d.path().join("big.toml");
    std::fs::write(&big, "# a comment\n".repeat(500_000)).unwrap();
    let out = d.path().join("o.jsonl");
    for (args, want) in [
        (vec!["sim", "sweep", "/dev/zero", "-o", out.to_str().unwrap()], "/dev/zero: is not a regular file, not a sweep spec"),
        (vec!["sim", "run", "/dev/zero"], "/dev/zero: is not a regular file"),
        (vec!["sim", "run", big.to_str().unwrap()], "big.toml: larger than 4 MiB: not a scenario or device file"),
        (vec!["agent", "check", "--config", "/dev/zero"], "cannot read config /dev/zero: not a regular file"),
        (vec!["sim", "sweep", spec.to_str().unwrap(), "-o", "/dev/full"], "/dev/full: exists and is not a regular file"),
        (vec!["sim", "merge", "/dev/zero", "-o", merged.to_str().unwrap()], "/dev/zero:1: line longer than 64 MiB"),
        (vec!["report", "/dev/zero", "-o", html.to_str().unwrap()], "/dev/zero: a NUL byte at byte 0"),
        (vec!["report", "/dev/null", "-o", "/dev/null", "--force"], "/dev/null: exists and is not a regular file"),
    ] {
        let t0 = Instant::now();
        let o = forefront(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
        assert!(t0.elapsed() < Duration::from_secs(2), "{args:?} took {:?}", t0.elapsed());
    }
}
