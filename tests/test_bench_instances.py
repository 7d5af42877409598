"""benchmarks/instances.py: the code version a benchmark row records."""

import importlib.util
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _instances():
    spec = importlib.util.spec_from_file_location("instances", ROOT / "benchmarks" / "instances.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_code_version_names_a_checkout_other_than_the_benchmarks(tmp_path):
    # an editable install left pointing at a CI clone once made a benchmark row name the
    # wrong commit: the row must say which checkout's code ran
    inst = _instances()
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", "-c",
           "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    (tmp_path / "pcsos").mkdir()
    (tmp_path / "pcsos" / "x.py").write_text("")
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "x"], check=True)
    head = subprocess.run(git[:3] + ["rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    other = inst.code_version(tmp_path / "pcsos")
    assert other.startswith(head) and str(tmp_path.resolve()) in other
    if (ROOT / ".git").exists():
        assert "pcsos from" not in inst.code_version(ROOT / "pcsos")


def test_bench_solve_runs_the_datasets_of_another_folder(tmp_path, monkeypatch, capsys):
    # checks on the study's other datasets (accent, ecoli, gene) run from their own folder
    import json
    import sys

    import numpy as np

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    monkeypatch.setitem(sys.modules, "instances", _instances())
    spec = importlib.util.spec_from_file_location("bench_solve", ROOT / "benchmarks" /
                                                  "bench_solve.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    X = np.random.default_rng(0).normal(size=(10, 2))
    (tmp_path / "toy" / "constraints").mkdir(parents=True)
    (tmp_path / "toy" / "data.txt").write_text(
        "10 2 3\n" + "".join(f"{a:.17g} {b:.17g}\n" for a, b in X))
    (tmp_path / "toy" / "constraints" / "ml_1_cl_1_0.txt").write_text("ML 0 1\nCL 2 3\n")
    out = tmp_path / "rows.jsonl"
    assert bench.main(["--folder", str(tmp_path), "--datasets", "toy", "--workers", "1",
                       "--time-limit", "120", "--out", str(out)]) == 0
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["instance"] == "toy/ml_1_cl_1_0" and (row["n"], row["k"]) == (10, 3)
    assert (row["ml"], row["cl"]) == (1, 1) and row["status"] == "optimal"
    assert "1 of 1 instances optimal" in capsys.readouterr().out
