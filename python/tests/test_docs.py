"""docs/python.md is a notebook: its ```python cells run in order in one namespace (in a temp
dir), and the numbers each prints are the numbers in the ```text cell after it. Cells that
import a package not installed here (matplotlib, dask) are skipped with it."""

import contextlib
import importlib.util
import io
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "python.md"
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def cells():
    """(code, expected output or None) per ```python cell."""
    text = DOC.read_text()
    blocks = re.findall(r"```(\w+)\n(.*?)```", text, re.S)
    out = []
    for i, (lang, body) in enumerate(blocks):
        if lang == "python":
            nxt = blocks[i + 1] if i + 1 < len(blocks) else None
            out.append((body, nxt[1] if nxt and nxt[0] == "text" else None))
    return out


def test_the_notebook_runs_and_prints_its_numbers(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    ran = 0
    for code, want in cells():
        needs = [m for m in ("matplotlib", "dask") if re.search(rf"^\s*(import|from) {m}\b", code, re.M)]
        if any(importlib.util.find_spec(m) is None for m in needs):
            continue
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            exec(compile(code, str(DOC), "exec"), ns)
        ran += 1
        if want is not None:
            got = buf.getvalue()
            assert NUMBER.findall(got) == NUMBER.findall(want), f"cell printed:\n{got}\ndoc says:\n{want}"
    assert ran >= 3, "the notebook's cells did not run"
