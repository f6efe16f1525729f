"""The Python package against the CLI: same input and seed, same report; a sweep's lines are
the bytes `forefront sim sweep` writes, locally, on threads, on an executor and on a Dask
LocalCluster; bad input raises ForefrontError with the Rust error text."""

import json
import os
import subprocess
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

import forefront

REPO = Path(__file__).resolve().parents[2]
# 2 policies x 2 BG counts x 2 device bounds x 2 seeds, 4 simulated seconds each.
SPEC = {
    "scenario": "camera-switch",
    "policies": ["android", "fasttrack"],
    "bg_apps": [0, 1],
    "seeds": 2,
    "axes": {"duration_s": [4.0], "device.starvation_ms": [250.0, 500.0]},
}
SPEC_TOML = """scenario = "camera-switch"
policies = ["android", "fasttrack"]
bg_apps = [0, 1]
seeds = 2
[axes]
"duration_s" = [4.0]
"device.starvation_ms" = [250.0, 500.0]
"""


def cli():
    """The `forefront` binary: $FOREFRONT, else the workspace's release build."""
    path = Path(os.environ.get("FOREFRONT", REPO / "target" / "release" / "forefront"))
    if not path.is_file():
        pytest.skip(f"no forefront binary at {path} (cargo build --release -p forefront-cli, or set FOREFRONT)")
    return str(path)


def without_stats(report):
    report = dict(report)
    report.pop("stats", None)
    return report


def test_names_list_the_builtins():
    assert "launch-update" in forefront.scenarios()
    assert "fasttrack" in forefront.policies()
    assert "galaxy-s6-ufs" in forefront.devices()


@pytest.mark.parametrize(
    "args",
    [
        ["launch-update", "--policy", "fasttrack", "--bg-apps", "2", "--seed", "3"],
        ["camera-switch", "--policy", "qasio", "--bg-apps", "1", "--device", "galaxy-s5-emmc", "--scheduler", "deadline"],
    ],
)
def test_run_gives_the_cli_report(args):
    out = subprocess.run([cli(), "sim", "run", *args, "--format", "json"], check=True, capture_output=True, text=True)
    want = without_stats(json.loads(out.stdout))
    kw = dict(zip([a.lstrip("-").replace("-", "_") for a in args[1::2]], args[2::2]))
    for k in ("bg_apps", "seed"):
        if k in kw:
            kw[k] = int(kw[k])
    got = forefront.run(args[0], **kw)
    assert got["stats"]["events"] > 0
    assert without_stats(got) == want


def test_a_scenario_object_runs_like_its_name():
    by_name = forefront.run("switch-upload", policy="fasttrack", bg_apps=1, seed=2)
    loaded = forefront.Scenario.load("switch-upload")
    assert loaded.name == "switch-upload"
    assert without_stats(forefront.run(loaded, policy="fasttrack", bg_apps=1, seed=2)) == without_stats(by_name)
    text = (REPO / "scenarios" / "switch-upload.toml").read_text()
    from_toml = forefront.Scenario.from_toml(text, name="switch-upload.toml")
    assert without_stats(forefront.run(from_toml, policy="fasttrack", bg_apps=1, seed=2)) == without_stats(by_name)
    from_file = forefront.Scenario.load(REPO / "scenarios" / "switch-upload.toml")
    assert from_file.to_dict() == loaded.to_dict()
    # A changed dict runs the changed scenario.
    d = loaded.to_dict()
    d["duration_s"] = 5.0
    short = forefront.run(forefront.Scenario.from_dict(d), policy="fasttrack", bg_apps=1, seed=2)
    assert short["metrics"]["fg_samples_ms"] != by_name["metrics"]["fg_samples_ms"]


def test_bad_input_raises_with_the_rust_error_text():
    with pytest.raises(forefront.ForefrontError, match="unknown scenario `nosuch`"):
        forefront.run("nosuch")
    with pytest.raises(ValueError, match="unknown policy `androd`; did you mean `android`"):
        forefront.run("launch-update", policy="androd")
    with pytest.raises(forefront.ForefrontError, match="unknown device `nodev`"):
        forefront.run("launch-update", device="nodev")
    with pytest.raises(forefront.ForefrontError, match="unknown scheduler `bfqx`"):
        forefront.run("launch-update", scheduler="bfqx")
    with pytest.raises(forefront.ForefrontError, match=r"^my\.toml:3:\d+: "):
        forefront.Scenario.from_toml('name = "x"\ndescription = "y"\nheadline = \n', name="my.toml")
    with pytest.raises(forefront.ForefrontError, match="^<dict>: unknown field `colour`"):
        d = forefront.Scenario.load("launch-update").to_dict()
        d["colour"] = "red"
        forefront.Scenario.from_dict(d)
    with pytest.raises(forefront.ForefrontError, match=r"^<string>:5: unknown field `nope`"):
        forefront.SweepSpec.from_toml(SPEC_TOML.replace("seeds = 2", "seeds = 2\nnope = 1"))
    with pytest.raises(forefront.ForefrontError, match=r'<dict>: axes\."phone\.no_such": no field `no_such`'):
        forefront.sweep({**SPEC, "axes": {"phone.no_such": [1]}})
    with pytest.raises(forefront.ForefrontError, match="<dict>: policies: unknown policy `fastrack`"):
        forefront.sweep({**SPEC, "policies": ["fastrack"]})
    with pytest.raises(forefront.ForefrontError, match="no-such-spec.toml"):
        forefront.sweep("no-such-spec.toml")
    with pytest.raises(TypeError):
        forefront.sweep(42)


def test_sizes_beyond_their_limits_raise_before_anything_runs():
    # 10**9 background apps once grew the interpreter to 24 GB; now a limit with its name.
    for n in (10**9, 10**12):
        with pytest.raises(forefront.ForefrontError, match=rf"^bg_apps: {n} is over the limit of 1000"):
            forefront.run("launch-update", bg_apps=n)
    with pytest.raises(forefront.ForefrontError, match="bg_apps: 1000000000 is over the limit"):
        forefront.SweepSpec({**SPEC, "bg_apps": [10**9]})
    with pytest.raises(forefront.ForefrontError, match="seeds: seed 1 is listed twice"):
        forefront.SweepSpec({**SPEC, "seeds": [1, 1, 1]})
    with pytest.raises(forefront.ForefrontError, match="seeds: 0 seeds make no run"):
        forefront.SweepSpec({**SPEC, "seeds": 0})
    with pytest.raises(forefront.ForefrontError, match=r"queue_depth must be 1\.\.=256, got 0"):
        forefront.sweep({**SPEC, "axes": {"device.queue_depth": [0]}})


@pytest.fixture(scope="module")
def cli_sweep(tmp_path_factory):
    """`forefront sim sweep` of SPEC_TOML: (spec path, the bytes it writes)."""
    d = tmp_path_factory.mktemp("sweep")
    spec = d / "spec.toml"
    spec.write_text(SPEC_TOML)
    subprocess.run([cli(), "sim", "sweep", str(spec), "-o", str(d / "cli.jsonl")], check=True, capture_output=True)
    return spec, (d / "cli.jsonl").read_bytes()


def test_a_sweep_writes_the_cli_bytes_and_a_dataframe(cli_sweep, tmp_path):
    spec_path, want = cli_sweep
    out = tmp_path / "py.jsonl"
    df = forefront.sweep(SPEC, output=out)
    assert out.read_bytes() == want
    # The same spec as a TOML file, as TOML text, on one thread: the same lines.
    assert [l + "\n" for l in forefront.sweep_lines(spec_path, max_workers=1)] == want.decode().splitlines(keepends=True)
    assert "\n".join(forefront.sweep_lines(forefront.SweepSpec.from_toml(SPEC_TOML))) + "\n" == want.decode()
    assert len(df) == 16
    assert list(df["index"]) == list(range(16))
    for col in ("policy", "bg_apps", "device", "seed", "device.starvation_ms", "duration_s", "fg_ms", "fg_p99_ms", "breakdown.device_queue"):
        assert col in df.columns, col
    assert set(df["policy"]) == {"android", "fasttrack"}
    # The file reads back into the same frame.
    back = forefront.runs_to_dataframe(out)
    assert back.equals(df)
    # Reports from run() become rows too, with the sweep's figures for the same point.
    row = df[(df.policy == "fasttrack") & (df.bg_apps == 1) & (df.seed == 2) & (df["device.starvation_ms"] == 500.0)].iloc[0]
    assert row["fg_ms"] > 0
    assert set(forefront.SweepSpec(SPEC).points()[row["index"]]) == {"policy", "bg_apps", "device", "seed", "axes"}


def test_a_sweep_on_an_executor_gives_the_same_lines(cli_sweep):
    _, want = cli_sweep
    with ProcessPoolExecutor(max_workers=2) as pool:
        lines = forefront.sweep_lines(SPEC, client=pool)
    assert "\n".join(lines) + "\n" == want.decode()


def test_a_sweep_on_a_dask_local_cluster_gives_the_same_lines(cli_sweep):
    distributed = pytest.importorskip("dask.distributed")
    _, want = cli_sweep
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            lines = forefront.sweep_lines(SPEC, client=client)
            df = forefront.sweep(SPEC, client=client)
    assert "\n".join(lines) + "\n" == want.decode()
    assert len(df) == 16


def test_a_sweep_through_the_ray_api_gives_the_same_lines(cli_sweep):
    """Ray is not installed in CI (hundreds of MB): a stand-in with Ray's calls (`init`,
    `remote(f).remote(*args)` -> a reference, `get(refs)`) checks how sweeps use it."""
    _, want = cli_sweep

    class Ref:
        def __init__(self, value):
            self.value = value

    class FakeRay:
        def init(self):
            pass

        def remote(self, f):
            class Task:
                @staticmethod
                def remote(*args):
                    return Ref(f(*args))

            return Task

        def get(self, refs):
            return [r.value for r in refs] if isinstance(refs, list) else refs.value

        def wait(self, refs, num_returns=1):
            return refs[:num_returns], refs[num_returns:]

    lines = forefront.sweep_lines(SPEC, client=FakeRay())
    assert "\n".join(lines) + "\n" == want.decode()


def test_a_sweep_into_a_file_resumes_like_the_cli(cli_sweep, tmp_path):
    _, want = cli_sweep
    out = tmp_path / "runs.jsonl"
    out.write_bytes(b"".join(want.splitlines(keepends=True)[:10]))
    ran = []

    class Counting(ProcessPoolExecutor):
        def submit(self, fn, *args, **kw):
            ran.append(args[2])
            return super().submit(fn, *args, **kw)

    with Counting(max_workers=2) as pool:
        df = forefront.sweep(SPEC, client=pool, output=out)
    assert ran == list(range(10, 16)), "only the missing points run"
    assert out.read_bytes() == want
    assert list(df["index"]) == list(range(16))
    # Lines of another sweep are refused, naming the file.
    with pytest.raises(forefront.ForefrontError, match="runs.jsonl: has lines of another sweep"):
        forefront.sweep({**SPEC, "seeds": [7, 8]}, output=out)
