//! `forefront._core`: the simulator for Python. Everything crosses the boundary as JSON text
//! (scenarios, specs, reports, sweep lines), so a result is the same bytes the CLI prints and
//! `python/forefront/__init__.py` keeps the Python side (dicts, DataFrames, Dask) in Python.
//! Runs release the GIL: threads run simulations in parallel. Every error is a
//! `forefront.ForefrontError` (a `ValueError`) carrying the Rust error text (file, line, field).

use forefront_model::block::SchedulerConfig;
use forefront_policy::Policy;
use forefront_sim::RunConfig;
use forefront_sweep::Spec;
use forefront_workload::Scenario;
use pyo3::prelude::*;

pyo3::create_exception!(
    forefront,
    ForefrontError,
    pyo3::exceptions::PyValueError,
    "A scenario, policy, device or sweep the simulator refuses; the text names the file, line or field."
);

fn err(e: impl std::fmt::Display) -> PyErr {
    ForefrontError::new_err(e.to_string())
}

fn to_json<T: serde::Serialize>(v: &T) -> PyResult<String> {
    serde_json::to_string(v).map_err(err)
}

/// A built-in scenario name or a scenario TOML file, as JSON.
#[pyfunction]
fn scenario_load(name_or_path: &str) -> PyResult<String> {
    to_json(&Scenario::load(name_or_path).map_err(err)?)
}

/// Scenario TOML text (`file` names it in messages), checked, as JSON.
#[pyfunction]
fn scenario_parse(file: &str, text: &str) -> PyResult<String> {
    to_json(&Scenario::parse(file, text).map_err(err)?)
}

/// A scenario as JSON (e.g. a Python dict), checked like a file, as its canonical JSON.
#[pyfunction]
fn scenario_check(file: &str, json: &str) -> PyResult<String> {
    to_json(&scenario_from_json(file, json)?)
}

fn scenario_from_json(file: &str, json: &str) -> PyResult<Scenario> {
    let s: Scenario = serde_json::from_str(json).map_err(|e| err(format!("{file}: {}", forefront_sweep::json_message(&e))))?;
    s.validate().map_err(|e| err(format!("{file}: {e}")))?;
    Ok(s)
}

/// Built-in scenario, policy and device names.
#[pyfunction]
fn names() -> (Vec<&'static str>, Vec<&'static str>, Vec<&'static str>) {
    (forefront_workload::scenario_names().collect(), Policy::names(), forefront_workload::device_names().collect())
}

/// Run one simulation: the scenario by name/path (`scenario_name`) or as JSON
/// (`scenario_json`, named `file` in messages); the report as JSON, as `forefront sim run
/// --format json` prints it.
#[pyfunction]
#[pyo3(signature = (scenario_name, scenario_json, file, policy, bg_apps, seed, device, scheduler))]
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    scenario_name: Option<&str>,
    scenario_json: Option<&str>,
    file: &str,
    policy: &str,
    bg_apps: Option<u64>,
    seed: u64,
    device: Option<&str>,
    scheduler: Option<&str>,
) -> PyResult<String> {
    // Any Python int up to 2**64 - 1 reaches the limit check (a u32 would raise OverflowError).
    let max = forefront_workload::limits::MAX_BG_APPS;
    let bg_apps = bg_apps
        .map(|n| {
            u32::try_from(n)
                .ok()
                .filter(|&n| n <= max)
                .ok_or_else(|| err(format!("bg_apps: {n} is over the limit of {max} background app instances")))
        })
        .transpose()?;
    let mut cfg = match (scenario_name, scenario_json) {
        (Some(name), _) => RunConfig::builtin(name, policy, bg_apps, seed).map_err(err)?,
        (None, Some(json)) => {
            let scenario = scenario_from_json(file, json)?;
            let device = forefront_workload::load_device(&scenario.device).map_err(err)?;
            let policy = Policy::by_name(policy).map_err(err)?;
            let bg_apps = bg_apps.unwrap_or(scenario.bg_apps);
            RunConfig { scenario, device, policy, bg_apps, seed }
        }
        (None, None) => return Err(err("run: no scenario")),
    };
    if let Some(d) = device {
        cfg.device = forefront_workload::load_device(d).map_err(err)?;
    }
    if let Some(s) = scheduler {
        let all = SchedulerConfig::all();
        cfg.scenario.phone.scheduler = all.iter().find(|c| c.name() == s).cloned().ok_or_else(|| {
            let known: Vec<&str> = all.iter().map(|c| c.name()).collect();
            err(format!("unknown scheduler `{s}` (known: {})", known.join(", ")))
        })?;
    }
    let report = py.detach(|| forefront_sim::try_run(&cfg)).map_err(err)?;
    to_json(&report)
}

/// A sweep spec from `kind` = "toml" (text), "json" (text) or "file" (a path), checked, as
/// its JSON.
#[pyfunction]
fn sweep_spec(kind: &str, file: &str, text: &str) -> PyResult<String> {
    let spec = match kind {
        "toml" => Spec::parse(file, text),
        "json" => Spec::parse_json(file, text),
        "file" => Spec::load(std::path::Path::new(text)),
        _ => return Err(err(format!("sweep_spec: unknown kind `{kind}`"))),
    }
    .map_err(err)?;
    Ok(spec.to_json())
}

/// The points of a sweep (JSON list, in the sweep's order), each one's configuration checked.
#[pyfunction]
fn sweep_points(file: &str, spec_json: &str) -> PyResult<String> {
    let spec = Spec::parse_json(file, spec_json).map_err(err)?;
    let points = spec.points().map_err(err)?;
    for p in &points {
        spec.config(p).map_err(err)?;
    }
    to_json(&points)
}

/// The indices of the points already in a sweep's JSON Lines file `output` (none if it does
/// not exist); an error for a line of another sweep, as `forefront sim sweep` resumes.
#[pyfunction]
fn sweep_done(file: &str, spec_json: &str, output: &str) -> PyResult<Vec<usize>> {
    let spec = Spec::parse_json(file, spec_json).map_err(err)?;
    let all = spec.points().map_err(err)?;
    let lines = forefront_sweep::read_lines(std::path::Path::new(output)).map_err(err)?;
    Ok(forefront_sweep::done_indices(output, &spec, &all, &lines).map_err(err)?.into_iter().collect())
}

/// Rewrite a finished sweep's JSON Lines file in index order, one line per point, as
/// `forefront sim sweep` leaves it.
#[pyfunction]
fn sweep_finish(output: &str) -> PyResult<()> {
    forefront_sweep::finish(std::path::Path::new(output)).map_err(err)?;
    Ok(())
}

/// Run the sweep's point `index`; its line, exactly as `forefront sim sweep` writes it.
#[pyfunction]
fn sweep_run_point(py: Python<'_>, file: &str, spec_json: &str, index: usize) -> PyResult<String> {
    let spec = Spec::parse_json(file, spec_json).map_err(err)?;
    let line = py.detach(|| spec.run_point(index)).map_err(err)?;
    Ok(line.to_json())
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ForefrontError", m.py().get_type::<ForefrontError>())?;
    m.add_function(wrap_pyfunction!(scenario_load, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_parse, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_check, m)?)?;
    m.add_function(wrap_pyfunction!(names, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_spec, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_points, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_done, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_run_point, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_finish, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
