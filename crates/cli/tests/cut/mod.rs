//! A built-in scenario with its `duration_s` cap cut, for tests that need a run cut off (the
//! built-in caps are long enough for every run to finish) or short runs.

use std::path::{Path, PathBuf};

/// Writes `switch-upload` with `duration_s = secs` into `dir` and returns the file.
pub fn switch_upload(dir: &Path, secs: f64) -> PathBuf {
    let text = include_str!("../../../../scenarios/switch-upload.toml");
    let cut: String = text
        .lines()
        .map(|l| if l.starts_with("duration_s") { format!("duration_s = {secs:?}\n") } else { format!("{l}\n") })
        .collect();
    assert_ne!(cut, text, "switch-upload.toml has a duration_s line");
    let p = dir.join(format!("switch-upload-{secs}s.toml"));
    std::fs::write(&p, cut).unwrap();
    p
}
