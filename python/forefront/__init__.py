"""forefront for Python: load a scenario, run it, sweep policies x BG apps x devices x fields x
seeds into a pandas DataFrame, locally or on a Dask (or Ray) cluster.

    import forefront
    r = forefront.run("launch-update", policy="fasttrack", bg_apps=2, seed=1)
    r["metrics"]["fg_ms"]
    df = forefront.sweep({"scenario": "launch-update", "policies": ["android", "fasttrack"],
                          "bg_apps": [0, 2, 4], "seeds": 3})

The simulation is the Rust library the `forefront` CLI runs: the same input and seed give the
same report as `forefront sim run --format json` (less its wall-clock `stats`), and a sweep's
lines are byte for byte those of `forefront sim sweep`. Bad input raises `ForefrontError` (a
`ValueError`) with the Rust error text: file, line and field.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import Executor, ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from . import _core
from ._core import ForefrontError

__all__ = [
    "ForefrontError",
    "Scenario",
    "SweepSpec",
    "scenarios",
    "policies",
    "devices",
    "run",
    "sweep",
    "sweep_lines",
    "runs_to_dataframe",
]
__version__ = _core.__version__


def scenarios() -> list:
    """Built-in scenario names."""
    return list(_core.names()[0])


def policies() -> list:
    """Built-in policy names (``POLICY+COMPONENT`` combinations are accepted too)."""
    return list(_core.names()[1])


def devices() -> list:
    """Built-in device names."""
    return list(_core.names()[2])


class Scenario:
    """A checked scenario: a built-in or file (:meth:`load`), TOML text (:meth:`from_toml`)
    or a dict (:meth:`from_dict`, e.g. a loaded one changed with :meth:`to_dict`)."""

    def __init__(self, data: Mapping[str, Any], source: str):
        self._data = dict(data)
        self.source = source

    @classmethod
    def load(cls, name_or_path: Union[str, os.PathLike]) -> "Scenario":
        """A built-in scenario name (see :func:`scenarios`) or a scenario TOML file."""
        s = str(name_or_path)
        return cls(json.loads(_core.scenario_load(s)), s)

    @classmethod
    def from_toml(cls, text: str, name: str = "<string>") -> "Scenario":
        """Scenario TOML text; ``name`` stands for the file in error messages."""
        return cls(json.loads(_core.scenario_parse(name, text)), name)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], name: str = "<dict>") -> "Scenario":
        """A scenario as a dict with the fields of a scenario file (all of them: start from
        ``Scenario.load(...).to_dict()`` to change a few)."""
        return cls(json.loads(_core.scenario_check(name, json.dumps(data))), name)

    def to_dict(self) -> dict:
        """The scenario's fields (a deep copy)."""
        return json.loads(json.dumps(self._data))

    @property
    def name(self) -> str:
        return self._data.get("name", self.source)

    def __repr__(self) -> str:
        return f"Scenario({self.name!r}, source={self.source!r})"


def run(
    scenario: Union[str, os.PathLike, Scenario],
    policy: str = "android",
    bg_apps: Optional[int] = None,
    seed: int = 1,
    device: Optional[str] = None,
    scheduler: Optional[str] = None,
) -> dict:
    """Run one simulation; the report as a dict (``forefront sim run --format json``).

    ``scenario`` is a built-in name, a scenario file or a :class:`Scenario`; ``bg_apps``
    defaults to the scenario's, ``device`` (a built-in name or device file) to the scenario's,
    ``scheduler`` (noop, deadline, cfq, mq-deadline, bfq) to the scenario's."""
    if isinstance(scenario, Scenario):
        text = _core.run(None, json.dumps(scenario._data), scenario.source, policy, bg_apps, seed, device, scheduler)
    else:
        text = _core.run(str(scenario), None, "", policy, bg_apps, seed, device, scheduler)
    return json.loads(text)


class SweepSpec:
    """A checked sweep specification, as for ``forefront sim sweep``: ``scenario``,
    ``policies``, ``bg_apps``, optional ``devices``, ``seeds`` (a count or a list) and optional
    ``axes`` (dotted path -> values; ``device.`` paths go into the device)."""

    def __init__(self, spec: Union["SweepSpec", Mapping[str, Any], str, os.PathLike]):
        if isinstance(spec, SweepSpec):
            self.file, self.json = spec.file, spec.json
        elif isinstance(spec, Mapping):
            self.file = "<dict>"
            self.json = _core.sweep_spec("json", self.file, json.dumps(dict(spec)))
        elif isinstance(spec, (str, os.PathLike)):
            self.file = str(spec)
            self.json = _core.sweep_spec("file", self.file, self.file)
        else:
            raise TypeError(f"a sweep spec is a dict, a SweepSpec or a TOML file path, not {type(spec).__name__}")

    @classmethod
    def from_toml(cls, text: str, name: str = "<string>") -> "SweepSpec":
        s = cls.__new__(cls)
        s.file, s.json = name, _core.sweep_spec("toml", name, text)
        return s

    def to_dict(self) -> dict:
        return json.loads(self.json)

    def points(self) -> list:
        """Every point (policy, bg_apps, device, seed, axes) in the sweep's fixed order; each
        point's configuration is checked."""
        return json.loads(_core.sweep_points(self.file, self.json))

    def __repr__(self) -> str:
        return f"SweepSpec({self.to_dict()!r})"


def _run_point(file: str, spec_json: str, index: int) -> str:
    """One sweep point's line (what a cluster task runs; module-level so it pickles)."""
    return _core.sweep_run_point(file, spec_json, index)


def _completed(s: "SweepSpec", client: Any, max_workers: Optional[int], skip: Iterable[int]):
    """The lines of the points of ``s`` not in ``skip``, each as soon as its run finishes (in
    completion order)."""
    skip = set(skip)
    todo = [i for i in range(len(s.points())) if i not in skip]
    n = len(todo)
    args = ([s.file] * n, [s.json] * n, todo)
    if n == 0:
        return
    if client is None:
        with ThreadPoolExecutor(max_workers=max_workers or os.cpu_count() or 1) as pool:
            futures = [pool.submit(_run_point, *a) for a in zip(*args)]
            try:
                for f in as_completed(futures):
                    yield f.result()
            finally:
                for f in futures:
                    f.cancel()
        return
    if hasattr(client, "gather") and hasattr(client, "map") and hasattr(client, "scheduler_info"):
        # dask.distributed.Client; pure=False: each point is one task, never deduplicated.
        from dask.distributed import as_completed as dask_completed

        for f in dask_completed(client.map(_run_point, *args, pure=False)):
            yield f.result()
        return
    if hasattr(client, "remote") and hasattr(client, "get") and hasattr(client, "init"):
        # Ray: the `ray` module itself.
        task = client.remote(_run_point)
        pending = [task.remote(*a) for a in zip(*args)]
        while pending:
            done, pending = client.wait(pending, num_returns=1)
            yield client.get(done[0])
        return
    if isinstance(client, Executor):
        futures = [client.submit(_run_point, *a) for a in zip(*args)]
        for f in as_completed(futures):
            yield f.result()
        return
    raise TypeError(f"client: a dask.distributed.Client, the ray module or a concurrent.futures.Executor, not {type(client).__name__}")


def sweep_lines(
    spec: Union[SweepSpec, Mapping[str, Any], str, os.PathLike],
    client: Any = None,
    max_workers: Optional[int] = None,
    skip: Iterable[int] = (),
) -> list:
    """Run the points of a sweep (all but the indices in ``skip``); their lines (JSON text, in
    index order) exactly as ``forefront sim sweep`` writes them. A point whose run fails gives a
    line with its ``error`` instead of a ``report``; the others go on.

    ``client`` is where the points run: ``None`` for local threads (``max_workers``, default
    every core; runs release the GIL), a ``dask.distributed.Client`` (points mapped over its
    workers, which need ``forefront`` installed), the ``ray`` module after ``ray.init()``, or
    any ``concurrent.futures.Executor``."""
    s = SweepSpec(spec)
    lines = list(_completed(s, client, max_workers, skip))
    return sorted(lines, key=lambda line: json.loads(line)["index"])


def sweep(
    spec: Union[SweepSpec, Mapping[str, Any], str, os.PathLike],
    client: Any = None,
    output: Union[str, os.PathLike, None] = None,
    max_workers: Optional[int] = None,
):
    """Run a sweep (see :func:`sweep_lines` for ``client``) and return one DataFrame row per
    run (:func:`runs_to_dataframe`), in index order.

    With ``output``, the sweep is resumable like ``forefront sim sweep SPEC -o FILE``: each
    point's line is appended to the file, and flushed, as soon as the point finishes (an
    interrupted sweep keeps every finished point), points already in the file are not run
    again (failed ones are), and when every point is done the file is rewritten in index order,
    one line per point (the same bytes the CLI writes); the frame holds every run in the file.
    A file with lines of another sweep is an error."""
    s = SweepSpec(spec)
    if output is None:
        lines = sweep_lines(s, client=client, max_workers=max_workers)
        return runs_to_dataframe(json.loads(line) for line in lines)
    done = _core.sweep_done(s.file, s.json, str(output))
    with open(output, "a", encoding="utf-8", newline="\n") as f:
        for line in _completed(s, client, max_workers, done):
            f.write(line + "\n")
            f.flush()
    _core.sweep_finish(str(output))
    df = runs_to_dataframe(output)
    return df.sort_values("index", kind="stable").reset_index(drop=True)


def _flatten(report: Mapping[str, Any], row: dict) -> None:
    for k, v in report.items():
        if k in ("metrics",) and isinstance(v, Mapping):
            for mk, mv in v.items():
                if mk == "ui" and isinstance(mv, Mapping):
                    for uk, uv in mv.items():
                        if not isinstance(uv, (list, dict)):
                            row[f"ui_{uk}"] = uv
                else:
                    row[mk] = mv
        elif k in ("breakdown", "hooks") and isinstance(v, Mapping):
            for bk, bv in v.items():
                row[f"{k}.{bk}"] = bv
        elif k == "warnings":
            row["warnings"] = "; ".join(v)
        elif not isinstance(v, (list, dict)):
            row[k] = v


def runs_to_dataframe(runs: Union[Iterable[Mapping[str, Any]], str, os.PathLike]):
    """One row per run, from reports (:func:`run`'s dicts), sweep lines (dicts with
    ``index``, ``point``, ``report``) or a sweep's JSON Lines file.

    Columns: for sweep lines ``index`` and each axis (by its dotted path); the report's
    scenario, policy, device, scheduler, seed, bg_apps, headline; every metric (``fg_ms``,
    ``fg_p50_ms`` ... ``fg_max_ms``, ``bg_mb_per_s``, ..., ``fg_samples_ms`` as a list);
    ``breakdown.<layer>`` (ms per headline sample) and ``hooks.<hook>``."""
    import pandas as pd

    if isinstance(runs, (str, os.PathLike)):
        with open(runs, encoding="utf-8") as f:
            runs = [json.loads(l) for l in f if l.strip()]
    rows = []
    for r in runs:
        row: dict = {}
        if "error" in r and "point" in r:
            continue  # a failed point: no run to show
        if "report" in r and "point" in r:
            row["index"] = r["index"]
            for k, v in r["point"].get("axes", {}).items():
                row[k] = v
            _flatten(r["report"], row)
        else:
            _flatten(r, row)
        rows.append(row)
    return pd.DataFrame(rows)
