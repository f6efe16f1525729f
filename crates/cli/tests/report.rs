//! `forefront report`: end to end from `sim run --format json` to an HTML page, its errors and
//! overwrite rules, and a real headless browser (Debian's chromium) that loads the page and
//! measures its charts. Without chromium the browser test prints `SKIP: ...`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
mod cut;

fn forefront(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_forefront")).args(args).output().expect("run forefront")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Simulated runs saved as JSON: FG only, android and fasttrack with 2 BG apps, of switch-upload
/// cut at 60 s (the charts share their time axis: uncut, the stock run's 140 s would leave the FG
/// alone's 32 s a sliver of it).
fn runs(dir: &Path) -> Vec<PathBuf> {
    let sc = cut::switch_upload(dir, 60.0).to_str().unwrap().to_owned();
    [("alone", "android", "0"), ("android", "android", "2"), ("fasttrack", "fasttrack", "2")]
        .iter()
        .map(|(name, policy, bg)| {
            let o = forefront(&["sim", "run", &sc, "--policy", policy, "--bg-apps", bg, "--format", "json"]);
            assert!(o.status.success(), "sim run: {}", stderr(&o));
            let p = dir.join(format!("{name}.json"));
            std::fs::write(&p, &o.stdout).unwrap();
            p
        })
        .collect()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn writes_a_page_refuses_to_overwrite_and_is_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let rs = runs(dir.path());
    let out = dir.path().join("r.html");
    let mut args: Vec<&str> = vec!["report"];
    args.extend(rs.iter().map(|p| s(p)));
    args.extend(["-o", s(&out)]);
    let o = forefront(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stdout.is_empty(), "data goes to the file, not stdout");
    let page = std::fs::read_to_string(&out).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert_eq!(page.matches("<svg").count(), 3 + rs.len(), "CDF, legend, breakdown + one timeline per run");
    let no_ns = page.replace(r#"xmlns="http://www.w3.org/2000/svg""#, "");
    assert!(!page.contains("<script") && !no_ns.contains("http://") && !no_ns.contains("https://"), "self-contained, no network");
    // The delay of the android run against the FG-only run appears, and fasttrack reduces it.
    assert!(page.contains("delay reduction"));

    // Second run: refused without --force, and the file is untouched.
    std::fs::write(&out, "keep").unwrap();
    let o = forefront(&args);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("exists; pass --force"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "keep");
    args.push("--force");
    assert!(forefront(&args).status.success());
    assert_eq!(std::fs::read_to_string(&out).unwrap(), page, "same inputs, same bytes");

    // `-o -`: the page on stdout, byte for byte.
    let mut args: Vec<&str> = vec!["report"];
    args.extend(rs.iter().map(|p| s(p)));
    args.extend(["-o", "-"]);
    let o = forefront(&args);
    assert!(o.status.success());
    assert_eq!(String::from_utf8(o.stdout).unwrap(), page);
}

#[test]
fn bad_inputs_are_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.html");
    let cases = [
        ("truncated.json", "{\"scenario\": \"x\",\n", "not JSON"),
        ("other.json", "{\"scenario\": \"x\",\n \"policy\": 3}", "not a `forefront sim run --format json` run report"),
        ("cells.json", "{\"cells\": 1}", "sim compare"),
        ("text.json", "hello", "not JSON"),
        ("empty.json", "", "not JSON"),
    ];
    for (name, text, what) in cases {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        let o = forefront(&["report", s(&p), "-o", s(&out)]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{name}: {e}");
        assert!(e.contains(name) && e.contains(what) && e.contains("line "), "{name}: {e}");
        assert!(!e.contains("panicked"), "{name}: {e}");
        assert!(!out.exists(), "no output on error");
    }
    let o = forefront(&["report", "/nonexistent/run.json", "-o", s(&out)]);
    assert!(stderr(&o).contains("/nonexistent/run.json"), "{}", stderr(&o));
    assert!(!forefront(&["report", "-o", s(&out)]).status.success(), "at least one input");
}

#[test]
fn accepts_sim_compare_output() {
    let dir = tempfile::tempdir().unwrap();
    let o = forefront(&["sim", "compare", "switch-upload", "--bg-apps", "2", "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let p = dir.path().join("cmp.json");
    std::fs::write(&p, &o.stdout).unwrap();
    let o = forefront(&["report", s(&p), "-o", "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = String::from_utf8(o.stdout).unwrap();
    assert!(page.contains("cmp.json") && page.contains("fasttrack-minus"));
    assert!(page.contains("BG loss"));
}

/// A run with no headline sample: the 30-shot camera burst under a BG writer takes ~2 minutes of
/// simulated time (5.3 s alone), so with the scenario capped at 30 s it never finishes. Null
/// figures in JSON, `–` in the table and in the page, never `-0.0`.
#[test]
fn renders_runs_and_comparisons_without_samples_as_missing_figures() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/qasio-camera-burst.toml")).unwrap();
    let (line, _) = text.lines().enumerate().find(|(_, l)| l.starts_with("duration_s =")).expect("a duration_s line");
    let capped: Vec<String> =
        text.lines().enumerate().map(|(i, l)| if i == line { "duration_s = 30.0".to_string() } else { l.to_string() }).collect();
    let scenario = dir.path().join("burst-30s.toml");
    std::fs::write(&scenario, capped.join("\n")).unwrap();
    let sc = s(&scenario);
    let run = forefront(&["sim", "run", sc, "--policy", "android", "--format", "json"]);
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(stderr(&run).contains("no headline sample (`burst`)"), "{}", stderr(&run));
    let v: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    for k in ["fg_ms", "fg_p50_ms", "fg_p90_ms", "fg_p99_ms", "fg_max_ms"] {
        assert!(v["metrics"][k].is_null(), "{k}: {}", v["metrics"][k]);
    }
    let table = forefront(&["sim", "run", sc, "--policy", "android"]);
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(table.contains("mean         – ms") && !table.contains("-0.0"), "{table}");
    // Alone the burst finishes within the cap; with the BG writer it does not.
    let cmp = forefront(&["sim", "compare", sc, "--policy", "android", "--bg-apps", "0,1", "--format", "json"]);
    assert!(cmp.status.success(), "{}", stderr(&cmp));
    let c: serde_json::Value = serde_json::from_slice(&cmp.stdout).unwrap();
    assert!(c["cells"][0]["fg_ms"].is_number() && c["cells"][1]["fg_ms"].is_null(), "{c}");
    let (pr, pc) = (dir.path().join("run.json"), dir.path().join("cmp.json"));
    std::fs::write(&pr, &run.stdout).unwrap();
    std::fs::write(&pc, &cmp.stdout).unwrap();
    let o = forefront(&["report", s(&pr), s(&pc), "-o", "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = String::from_utf8(o.stdout).unwrap();
    assert!(page.contains("<td>–</td>") && !page.contains("NaN") && !page.contains("-0.0"), "missing figures as –");
}

/// `sim cells --format json`: its three tables, the same figures as the CLI's markdown.
#[test]
fn renders_sim_cells_output() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["sim", "cells", "--seeds", "1", "--bg-cells", "0,1", "--switch-bg-cells", "0", "--policy", "android"];
    let json = forefront(&[&args[..], &["--format", "json"]].concat());
    assert!(json.status.success(), "{}", stderr(&json));
    let md = String::from_utf8(forefront(&args).stdout).unwrap();
    let p = dir.path().join("cells.json");
    std::fs::write(&p, &json.stdout).unwrap();
    let o = forefront(&["report", s(&p), "-o", "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = String::from_utf8(o.stdout).unwrap();
    for class in ["cells-overhead", "cells-delay", "cells-switch"] {
        assert!(page.contains(&format!("<table class=\"{class}\">")), "{class} missing");
    }
    // The same figure in both renderings: the one-busy-cell slowdown.
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let slowdown = format!("{:.2}×", v["delay"][1]["slowdown"].as_f64().unwrap());
    assert!(md.contains(&slowdown) && page.contains(&format!("<td>{slowdown}</td>")), "{slowdown}");
}

#[test]
fn accepts_sim_sweep_json_lines_and_names_the_command_of_json_it_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.toml");
    std::fs::write(&spec, "scenario = \"camera-switch\"\npolicies = [\"android\", \"fasttrack\"]\nbg_apps = [1]\nseeds = 1\n")
        .unwrap();
    let lines = dir.path().join("sweep.jsonl");
    let o = forefront(&["sim", "sweep", s(&spec), "-o", s(&lines)]);
    assert!(o.status.success(), "sim sweep: {}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&lines).unwrap().lines().count(), 2);
    let o = forefront(&["report", s(&lines), "-o", "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = String::from_utf8(o.stdout).unwrap();
    assert!(page.contains("camera-switch") && page.contains("fasttrack"), "both runs of the sweep are in the page");
    // JSON another command wrote: named, with what is accepted.
    let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/traces/strace-f-tt-T.txt");
    let o = forefront(&["trace", "stats", trace, "--format", "json"]);
    let stats = dir.path().join("stats.json");
    std::fs::write(&stats, &o.stdout).unwrap();
    let o = forefront(&["report", s(&stats), "-o", "-"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("stats.json: the output of `forefront trace stats --format json`"), "{err}");
    assert!(err.contains("it reads the `--format json` output of `forefront sim run`") && err.contains("`sim sweep`"), "{err}");
}

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser"].into_iter().find(|c| {
        Command::new(c).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
    })
}

/// Run headless chromium on `url` with `extra` flags; (stdout, stderr). Killed after 120 s.
fn headless(bin: &str, url: &str, extra: &[&str]) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (out_p, err_p) = (dir.path().join("out"), dir.path().join("err"));
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
        ])
        .args(["--disable-component-update", "--disable-sync", "--hide-scrollbars", "--enable-logging=stderr", "--v=0"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_p).unwrap())
        .stderr(std::fs::File::create(&err_p).unwrap())
        .spawn()
        .expect("start chromium");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            assert!(st.success(), "chromium failed: {st}: {}", std::fs::read_to_string(&err_p).unwrap_or_default());
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (std::fs::read_to_string(&out_p).unwrap(), std::fs::read_to_string(&err_p).unwrap())
}

/// Page-side errors chromium logs with `--enable-logging=stderr`: console messages (uncaught
/// exceptions, failed loads reported to the console) of the page.
fn console_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught")).collect()
}

/// A harness page (same directory, file access allowed) that measures the report in an iframe:
/// one line per `<svg>` with its rendered size, each path's length, the rect count, how many
/// texts stick out of the svg, plus the report's script and resource counts.
const HARNESS: &str = r#"<!DOCTYPE html><html><body>
<iframe id="f" src="report.html" width="1250" height="3000"></iframe><pre id="out">PENDING</pre>
<script>
window.addEventListener('load', () => {
  const w = document.getElementById('f').contentWindow, d = w.document, res = [];
  res.push('scripts ' + d.querySelectorAll('script').length);
  res.push('resources ' + w.performance.getEntriesByType('resource').length);
  for (const s of d.querySelectorAll('svg')) {
    const r = s.getBoundingClientRect();
    const lens = [...s.querySelectorAll('path')].map(p => Math.round(p.getTotalLength()));
    let outside = 0;
    for (const t of s.querySelectorAll('text')) {
      const b = t.getBoundingClientRect();
      if (b.width > 0 && (b.left < r.left - 1 || b.right > r.right + 1 || b.top < r.top - 1 || b.bottom > r.bottom + 1)) outside++;
    }
    res.push(`svg ${[...s.classList].pop()} ${Math.round(r.width)} ${Math.round(r.height)} rects=${s.querySelectorAll('rect').length} outside=${outside} paths=${lens.join(',')}`);
  }
  document.getElementById('out').textContent = 'RESULT\n' + res.join('\n') + '\nEND';
});
</script></body></html>"#;

#[test]
fn renders_in_headless_chromium() {
    let Some(bin) = chromium() else {
        eprintln!("SKIP: chromium not found (apt-get install chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let rs = runs(dir.path());
    let page = dir.path().join("report.html");
    let mut args: Vec<&str> = vec!["report"];
    args.extend(rs.iter().map(|p| s(p)));
    args.extend(["-o", s(&page)]);
    assert!(forefront(&args).status.success());

    // The checker itself: a broken page must show up as console errors.
    let broken = dir.path().join("broken.html");
    std::fs::write(&broken, "<!DOCTYPE html><script>notDefined()</script>").unwrap();
    let (_, err) = headless(bin, &format!("file://{}", broken.display()), &["--dump-dom"]);
    assert!(!console_lines(&err).is_empty(), "the console check sees an uncaught error: {err}");

    // The report alone: loads without console errors; the DOM keeps every chart.
    let url = format!("file://{}", page.display());
    let (dom, err) = headless(bin, &url, &["--dump-dom"]);
    assert!(console_lines(&err).is_empty(), "console errors: {:?}", console_lines(&err));
    assert_eq!(dom.matches("<svg").count(), 3 + rs.len(), "{dom}");
    assert!(dom.contains("FG latency CDF") && dom.contains("Per-layer breakdown"));

    // Measured in the browser: every chart has a size, its lines have length, its text fits.
    let harness = dir.path().join("harness.html");
    std::fs::write(&harness, HARNESS).unwrap();
    let (dom, err) = headless(bin, &format!("file://{}", harness.display()), &["--allow-file-access-from-files", "--dump-dom"]);
    assert!(console_lines(&err).is_empty(), "console errors: {:?}", console_lines(&err));
    let result = dom.split("RESULT\n").nth(1).and_then(|r| r.split("\nEND").next()).unwrap_or_else(|| panic!("no result: {dom}"));
    let lines: Vec<&str> = result.lines().collect();
    assert_eq!(lines[0], "scripts 0");
    assert_eq!(lines[1], "resources 0", "no external resources");
    let svgs: Vec<Vec<&str>> = lines[2..].iter().map(|l| l.split(' ').collect()).collect();
    assert_eq!(svgs.len(), 3 + rs.len(), "{result}");
    for f in &svgs {
        let (w, h): (u32, u32) = (f[2].parse().unwrap(), f[3].parse().unwrap());
        assert!(w >= 200 && h >= 20, "rendered size: {f:?}");
        assert_eq!(f[5], "outside=0", "text inside its chart: {f:?}");
    }
    let kind = |k: &str| svgs.iter().filter(|f| f[1] == k).collect::<Vec<_>>();
    let path_lens = |f: &Vec<&str>| -> Vec<u32> {
        f[6].trim_start_matches("paths=").split(',').filter(|x| !x.is_empty()).map(|x| x.parse().unwrap()).collect()
    };
    // CDF: one visible line per run.
    let cdf = kind("line-chart");
    assert_eq!(cdf.len(), 1);
    let lens = path_lens(cdf[0]);
    assert_eq!(lens.len(), rs.len());
    assert!(lens.iter().all(|&l| l > 100), "CDF lines drawn: {lens:?}");
    // Timelines: FG and BG lines in each, and the BG apps' runs have shaded phases.
    let tl = kind("timeline");
    assert_eq!(tl.len(), rs.len());
    for f in &tl {
        let lens = path_lens(f);
        assert_eq!(lens.len(), 2, "{f:?}");
        assert!(lens.iter().all(|&l| l > 100), "{f:?}");
        let rects: u32 = f[4].trim_start_matches("rects=").parse().unwrap();
        assert!(rects >= 2, "title swatch + phases: {f:?}");
    }
    // Breakdown: a stacked bar per run, segments plus legend boxes.
    let bars = kind("bars");
    assert_eq!(bars.len(), 1);
    let rects: usize = bars[0][4].trim_start_matches("rects=").parse().unwrap();
    assert!(rects > 2 * rs.len(), "{:?}", bars[0]);

    // And a screenshot: a real PNG of the whole page, not blank.
    let png = dir.path().join("shot.png");
    headless(bin, &url, &["--window-size=1250,2600", &format!("--screenshot={}", png.display())]);
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(u32::from_be_bytes(bytes[16..20].try_into().unwrap()), 1250, "PNG width");
    assert!(bytes.len() > 50_000, "a page of charts, not a blank image: {} bytes", bytes.len());
    if let Ok(keep) = std::env::var("FOREFRONT_REPORT_SCREENSHOT") {
        std::fs::copy(&png, keep).unwrap();
    }
}
