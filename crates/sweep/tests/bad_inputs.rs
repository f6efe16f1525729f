//! The corpus of hostile inputs in `testdata/bad/` — scenarios, devices and sweep specs, each
//! with its expected error on its first line (`# expect: <text>`) — fed to the loaders the
//! front ends use: each is refused, with its expected text, in under a second.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use forefront_sim::RunConfig;
use forefront_sweep::Spec;

fn corpus(kind: &str) -> Vec<(PathBuf, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/bad").join(kind);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{}: {} files", dir.display(), files.len());
    files
        .into_iter()
        .map(|p| {
            let head = std::fs::read(&p).expect("readable");
            let first = head.split(|&b| b == b'\n').next().unwrap_or_default();
            let expect = std::str::from_utf8(first)
                .ok()
                .and_then(|l| l.strip_prefix("# expect: "))
                .unwrap_or_else(|| panic!("{}: the first line must be `# expect: <text>`", p.display()))
                .to_string();
            (p, expect)
        })
        .collect()
}

/// Feed every file of `kind` to `load`, which must refuse it with its expected text, quickly.
fn refuse_all(kind: &str, load: impl Fn(&Path) -> Result<(), String>) {
    let mut failures = vec![];
    for (path, expect) in corpus(kind) {
        let t = Instant::now();
        let got = load(&path);
        let took = t.elapsed();
        match got {
            Ok(()) => failures.push(format!("{}: accepted (expected `{expect}`)", path.display())),
            Err(e) if !e.contains(&expect) => failures.push(format!("{}: `{e}` lacks `{expect}`", path.display())),
            Err(_) if took > Duration::from_secs(1) => failures.push(format!("{}: took {took:?}", path.display())),
            Err(_) => {}
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn every_bad_scenario_is_refused_with_its_error() {
    // As `sim run FILE` loads it: the scenario, its device, then the run's checks.
    refuse_all("scenario", |p| {
        let cfg = RunConfig::builtin(p.to_str().expect("UTF-8 path"), "android", None, 1).map_err(|e| e.to_string())?;
        cfg.check().map_err(|e| e.to_string())
    });
}

#[test]
fn every_bad_device_is_refused_with_its_file_and_line() {
    refuse_all("device", |p| {
        let name = p.to_str().expect("UTF-8 path");
        match forefront_workload::load_device(name) {
            Ok(_) => Ok(()),
            Err(e) => {
                let e = e.to_string();
                assert!(e.starts_with(&format!("{name}:")), "{e}: names the file");
                Err(e)
            }
        }
    });
}

#[test]
fn every_bad_sweep_is_refused_with_its_error() {
    // As `sim sweep SPEC` does before running anything: the spec, its points, each point's
    // configuration.
    refuse_all("sweep", |p| {
        let spec = Spec::load(p).map_err(|e| e.0)?;
        for point in spec.points().map_err(|e| e.0)? {
            spec.config(&point).map_err(|e| e.0)?;
        }
        Ok(())
    });
}
