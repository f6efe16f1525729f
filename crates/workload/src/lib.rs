//! Scenario specs and operations.
//!
//! A [`Scenario`] (TOML, `deny_unknown_fields`) names a device, the phone's CPU and memory
//! settings, the files on flash at the start, and the apps with their threads' operations
//! ([`Op`]). One app may be a background *template* (`role = "bg"`) that the simulator
//! instantiates `--bg-apps N` times, substituting `{i}` in its paths. The scenario names its
//! headline phase: the time the user waits, measured between `phase_begin` and `phase_end`.
//!
//! Built-in scenarios and devices are embedded ([`builtin_scenario`], [`builtin_device`]); a
//! user file is loaded with [`Scenario::from_file`], and every error names the file, the line
//! and the field:
//!
//! ```
//! let err = forefront_workload::Scenario::parse("x.toml", "name = 'a'\nheadlin = 'b'\n").unwrap_err();
//! assert!(err.to_string().starts_with("x.toml:2:1"), "{err}");
//! ```

pub mod bench;
pub mod cells;
mod check;
pub mod knobs;
mod size;
mod spec;
pub mod trace_ops;

pub use cells::{AppInstance, CellInstance, CellRole, CellSpec, CellsParams};
pub use check::{limits, op_name};
pub use knobs::{IoprioClass, KnobSpec};
pub use size::Bytes;
pub use spec::*;

use std::path::Path;

use forefront_model::flash::FlashParams;

/// A scenario or device file that could not be used; the message names file, line and field.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{file}:{line}:{column}: {message}")]
    Parse { file: String, line: usize, column: usize, message: String },
    /// A value the checks refuse; `line` is where its key is in the file (when it is there:
    /// a defaulted field has none).
    #[error("{file}{}: {message}", line.map_or_else(String::new, |l| format!(":{l}")))]
    Invalid { file: String, line: Option<usize>, message: String },
    #[error("{file}: {source}")]
    Io { file: String, source: std::io::Error },
    #[error("unknown {kind} `{name}`{} (known: {known})", did_you_mean(name, known.split(", ")))]
    Unknown { kind: &'static str, name: String, known: String },
}

/// `; did you mean `x`?` for the candidate closest to `name` (Jaro-Winkler ≥ 0.8), else nothing.
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(name, c), c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map_or_else(String::new, |(_, c)| format!("; did you mean `{c}`?"))
}

pub(crate) fn parse_toml<T: serde::de::DeserializeOwned>(file: &str, text: &str) -> Result<T, LoadError> {
    toml::from_str(text).map_err(|e| {
        let (line, column) = match e.span() {
            Some(span) => line_col(text, span.start),
            None => (1, 1),
        };
        LoadError::Parse { file: file.to_string(), line, column, message: e.message().trim().to_string() }
    })
}

/// A refused value of `text` (the file `file`): `message` begins with the dotted key it
/// concerns (`phone.fs.journal_mib`, `app[1].thread[0].ops[3]`), whose line [`locate`] finds.
pub fn invalid_at(file: &str, text: &str, message: String) -> LoadError {
    LoadError::Invalid { file: file.to_string(), line: locate(text, &message), message }
}

/// The line (1-based) of the key a message begins with, in TOML `text`: the deepest part of
/// the dotted path (`phone.fs.journal_mib`, `app[1].thread[0].ops[3].ms`, indices from 0) that
/// the file spells out; `None` when not even its first key is in the file (a default).
pub fn locate(text: &str, message: &str) -> Option<usize> {
    let key = message.split([' ', ':', '(']).next()?;
    let doc = toml_edit::ImDocument::parse(text).ok()?;
    let mut item = doc.as_item();
    let mut span = None;
    for part in key.split('.') {
        let mut pieces = part.split('[');
        let name = pieces.next()?;
        item = item.get(name)?;
        span = item.span().or(span);
        for index in pieces {
            let i: usize = index.strip_suffix(']')?.parse().ok()?;
            match item.get(i) {
                Some(next) => item = next,
                None => return span.map(|s| line_col(text, s.start).0),
            }
            span = item.span().or(span);
        }
    }
    span.map(|s| line_col(text, s.start).0)
}

/// The largest scenario or device file read: they are written by hand (the largest built-in
/// scenario is 34 KiB); a larger file is refused before it is parsed, so a generated
/// 50 MB scenario cannot take gigabytes of memory to load.
pub const MAX_FILE_BYTES: u64 = 4 << 20;

/// A file's text; a byte that is not UTF-8 is named by its offset. At most [`MAX_FILE_BYTES`].
pub(crate) fn read_text(path: &Path) -> Result<String, LoadError> {
    use std::io::Read;
    let file = path.display().to_string();
    let io = |source| LoadError::Io { file: file.clone(), source };
    let mut bytes = Vec::new();
    std::fs::File::open(path).and_then(|f| f.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)).map_err(io)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        let message = format!("larger than {} MiB: not a scenario or device file", MAX_FILE_BYTES >> 20);
        return Err(LoadError::Invalid { file, line: None, message });
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        LoadError::Invalid { file, line: None, message: format!("not UTF-8 text: invalid byte at offset {at}") }
    })
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, column)
}

const SCENARIOS: &[(&str, &str)] = &[
    ("launch-update", include_str!("../../../scenarios/launch-update.toml")),
    ("switch-upload", include_str!("../../../scenarios/switch-upload.toml")),
    ("camera-switch", include_str!("../../../scenarios/camera-switch.toml")),
    // QASIO (FAST'15) on its Galaxy S5: microbenchmarks M1–M5 and three real-life scenarios.
    ("qasio-m1", include_str!("../../../scenarios/qasio-m1.toml")),
    ("qasio-m2", include_str!("../../../scenarios/qasio-m2.toml")),
    ("qasio-m3", include_str!("../../../scenarios/qasio-m3.toml")),
    ("qasio-m4", include_str!("../../../scenarios/qasio-m4.toml")),
    ("qasio-m5", include_str!("../../../scenarios/qasio-m5.toml")),
    ("qasio-contacts", include_str!("../../../scenarios/qasio-contacts.toml")),
    ("qasio-camera-burst", include_str!("../../../scenarios/qasio-camera-burst.toml")),
    ("qasio-install", include_str!("../../../scenarios/qasio-install.toml")),
    // FTC + VT-CFS (SPE'15) on its Galaxy Nexus: a photo editor's taps and drags under BG CPU load.
    ("ftc-photo-editor", include_str!("../../../scenarios/ftc-photo-editor.toml")),
    // FTC + VT-CFS, the SPE 2015 journal's setup: the Galaxy Nexus and its HZ = 128 kernel.
    ("ftc-aviary", include_str!("../../../scenarios/ftc-aviary.toml")),
    // Cells (SOSP'11) on its Nexus S: five virtual phones, launches and cell switches.
    ("cells-nexus-s", include_str!("../../../scenarios/cells-nexus-s.toml")),
    ("cells-switch", include_str!("../../../scenarios/cells-switch.toml")),
    // Revisiting Storage (FAST'12) on its Nexus One: WebBench, a browser visiting 50 sites.
    ("webbench", include_str!("../../../scenarios/webbench.toml")),
    ("rlbench", include_str!("../../../scenarios/rlbench.toml")),
    ("appinstall", include_str!("../../../scenarios/appinstall.toml")),
    ("applaunch", include_str!("../../../scenarios/applaunch.toml")),
];

const DEVICES: &[(&str, &str)] = &[
    ("galaxy-s5-emmc", include_str!("../../../devices/galaxy-s5-emmc.toml")),
    ("galaxy-s6-ufs", include_str!("../../../devices/galaxy-s6-ufs.toml")),
    ("sd-transcend-c2", include_str!("../../../devices/sd-transcend-c2.toml")),
    ("sd-ridata-c2", include_str!("../../../devices/sd-ridata-c2.toml")),
    ("sd-sandisk-c4", include_str!("../../../devices/sd-sandisk-c4.toml")),
    ("sd-kingston-c4", include_str!("../../../devices/sd-kingston-c4.toml")),
    ("sd-wintec-c6", include_str!("../../../devices/sd-wintec-c6.toml")),
    ("sd-adata-c6", include_str!("../../../devices/sd-adata-c6.toml")),
    ("sd-patriot-c10", include_str!("../../../devices/sd-patriot-c10.toml")),
    ("sd-pny-c10", include_str!("../../../devices/sd-pny-c10.toml")),
    ("nexus-s-inand", include_str!("../../../devices/nexus-s-inand.toml")),
    // FTC + VT-CFS (SPE'15): the Galaxy Nexus's eMMC.
    ("galaxy-nexus-emmc", include_str!("../../../devices/galaxy-nexus-emmc.toml")),
    // Revisiting Storage (FAST'12): the Nexus One's internal NAND, and a RAM disk for what-ifs.
    ("nexus-one-nand", include_str!("../../../devices/nexus-one-nand.toml")),
    ("ramdisk", include_str!("../../../devices/ramdisk.toml")),
];

/// The default scenario of `forefront sim`.
pub const DEFAULT_SCENARIO: &str = "launch-update";

pub fn scenario_names() -> impl Iterator<Item = &'static str> {
    SCENARIOS.iter().map(|(n, _)| *n)
}
pub fn device_names() -> impl Iterator<Item = &'static str> {
    DEVICES.iter().map(|(n, _)| *n)
}

/// A built-in scenario by name.
pub fn builtin_scenario(name: &str) -> Result<Scenario, LoadError> {
    let (_, text) = SCENARIOS.iter().find(|(n, _)| *n == name).ok_or_else(|| LoadError::Unknown {
        kind: "scenario",
        name: name.to_string(),
        known: scenario_names().collect::<Vec<_>>().join(", "),
    })?;
    Scenario::parse(&format!("scenarios/{name}.toml"), text)
}

/// A built-in device, or a device file path. A name that is neither says which: a path that
/// does not exist, a directory or a special file (`/dev/null`) is named as such rather than as
/// an unknown device.
pub fn load_device(name_or_path: &str) -> Result<FlashParams, LoadError> {
    let (file, text) = match DEVICES.iter().find(|(n, _)| *n == name_or_path) {
        Some((n, t)) => (format!("devices/{n}.toml"), (*t).to_string()),
        None => {
            let path = Path::new(name_or_path);
            let invalid =
                |message: &str| LoadError::Invalid { file: name_or_path.to_string(), line: None, message: message.into() };
            match std::fs::metadata(path) {
                Ok(m) if m.is_dir() => return Err(invalid("is a directory, not a device file")),
                Ok(m) if !m.is_file() => return Err(invalid("is not a regular file (a device file is TOML)")),
                Ok(_) => (name_or_path.to_string(), read_text(path)?),
                Err(e) if looks_like_path(name_or_path) => {
                    return Err(LoadError::Io { file: name_or_path.to_string(), source: e });
                }
                Err(_) => {
                    return Err(LoadError::Unknown {
                        kind: "device",
                        name: name_or_path.to_string(),
                        known: device_names().collect::<Vec<_>>().join(", ") + ", or a path to a device file",
                    })
                }
            }
        }
    };
    let dev: FlashParams = parse_toml(&file, &text)?;
    dev.validate().map_err(|e| invalid_at(&file, &text, e))?;
    Ok(dev)
}

/// Whether a name that matches no built-in was meant as a file path (`./x`, `a/b`, `x.toml`).
fn looks_like_path(name: &str) -> bool {
    name.contains('/') || name.ends_with(".toml")
}

pub fn builtin_device(name: &str) -> Result<FlashParams, LoadError> {
    load_device(name)
}

impl Scenario {
    pub fn parse(file: &str, text: &str) -> Result<Scenario, LoadError> {
        let mut s: Scenario = parse_toml(file, text)?;
        let base = Path::new(file).parent().unwrap_or(Path::new("."));
        s.resolve_traces(base).map_err(|message| invalid_at(file, text, message))?;
        s.validate().map_err(|message| invalid_at(file, text, message))?;
        Ok(s)
    }

    pub fn from_file(path: &Path) -> Result<Scenario, LoadError> {
        let file = path.display().to_string();
        let m = std::fs::metadata(path).map_err(|source| LoadError::Io { file: file.clone(), source })?;
        if !m.is_file() {
            let what = if m.is_dir() { "is a directory" } else { "is not a regular file" };
            return Err(LoadError::Invalid { file, line: None, message: format!("{what}, not a scenario file") });
        }
        Scenario::parse(&file, &read_text(path)?)
    }

    /// A built-in name or a path to a scenario file.
    pub fn load(name_or_path: &str) -> Result<Scenario, LoadError> {
        if SCENARIOS.iter().any(|(n, _)| *n == name_or_path) {
            builtin_scenario(name_or_path)
        } else if Path::new(name_or_path).exists() || looks_like_path(name_or_path) {
            Scenario::from_file(Path::new(name_or_path))
        } else {
            Err(LoadError::Unknown {
                kind: "scenario",
                name: name_or_path.to_string(),
                known: scenario_names().collect::<Vec<_>>().join(", ") + ", or a path to a .toml file",
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_scenario_and_device_loads() {
        for n in scenario_names() {
            let s = builtin_scenario(n).unwrap_or_else(|e| panic!("{e}"));
            load_device(&s.device).unwrap_or_else(|e| panic!("{n}: {e}"));
        }
        for n in device_names() {
            builtin_device(n).unwrap_or_else(|e| panic!("{e}"));
        }
    }

    #[test]
    fn unknown_field_names_file_line_and_field() {
        let text = builtin_scenario("launch-update").map(|_| include_str!("../../../scenarios/launch-update.toml")).unwrap();
        let bad = text.replacen("headline =", "headlines =", 1);
        let line = bad.lines().position(|l| l.starts_with("headlines")).unwrap() + 1;
        let err = Scenario::parse("s.toml", &bad).unwrap_err().to_string();
        assert!(err.starts_with(&format!("s.toml:{line}:")), "{err}");
        assert!(err.contains("headlines"), "{err}");
    }

    #[test]
    fn bad_op_field_is_located() {
        let text = "name='x'\ndescription='d'\nheadline='p'\ndevice='galaxy-s5-emmc'\nduration_s=1\n\
                    [[app]]\nname='a'\nrole='fg'\n[[app.thread]]\nname='main'\n\
                    ops=[{op='read', path='/f', lenn=4}]\n";
        let err = Scenario::parse("t.toml", text).unwrap_err().to_string();
        assert!(err.starts_with("t.toml:11:"), "{err}");
        assert!(err.contains("lenn"), "{err}");
    }
}
