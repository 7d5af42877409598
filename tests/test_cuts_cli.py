"""``pcsos bound --cuts ...`` runs the cutting-plane loop (on a small generated instance)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pcsos.cli import main


@pytest.fixture
def tiny_files(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 2)) + rng.integers(0, 3, (12, 1)) * 2.0
    data = tmp_path / "data.txt"
    data.write_text(f"{len(X)} 2 3\n" + "\n".join(" ".join(map(str, r)) for r in X) + "\n")
    cons = tmp_path / "cons.txt"
    cons.write_text("ML 0 1\nCL 2 3\n")
    return data, cons


@pytest.mark.parametrize("mode", ["all", "triangle", "none"])
def test_bound_cli_cuts(tiny_files, tmp_path, capsys, mode):
    data, cons = tiny_files
    out = tmp_path / f"{mode}.json"
    rc = main(["bound", str(data), "-c", str(cons), "-k", "3", "--cuts", mode,
               "--max-iter", "2000", "--max-rounds", "5", "--json", str(out)])
    assert rc == 0
    rep = json.loads(out.read_text())
    assert rep["cuts"] == mode
    if mode == "none":
        assert rep["n_cuts"] == 0 and "cp_rounds" not in rep
    else:
        assert 1 <= rep["cp_rounds"] <= 5 and len(rep["rounds"]) == rep["cp_rounds"]
        assert rep["lower_bound"] == max(r["lower_bound"] for r in rep["rounds"])
        if mode == "triangle":
            assert rep["cuts_by_family"]["pair"] == 0 and rep["cuts_by_family"]["clique"] == 0
    assert "safe bound" in capsys.readouterr().out


def test_bound_cli_rejects_bad_cut_settings(tiny_files):
    data, cons = tiny_files
    assert main(["bound", str(data), "-k", "3", "--cuts", "all", "--cut-fraction", "2"]) == 2


@pytest.mark.parametrize("command", ["bound", "solve"])
@pytest.mark.parametrize("option, value, name", [("--cut-fraction", "2", "fraction"),
                                                 ("--eps-active", "-1", "eps_active"),
                                                 ("--cut-violation", "nan", "eps_violation"),
                                                 ("--cut-violation-fine", "-1",
                                                  "eps_violation_fine"),
                                                 ("--cut-violation-fine-gap", "nan",
                                                  "fine_gap"),
                                                 ("--loose-tol", "-1", "loose_tol"),
                                                 ("--loose-gap-factor", "-1",
                                                  "loose_gap_factor"),
                                                 ("--star-leaves", "2", "star_leaves"),
                                                 ("--max-rounds", "0", "max_rounds")])
def test_cli_rejects_bad_cut_settings(tiny_files, capsys, command, option, value, name):
    data, cons = tiny_files
    assert main([command, str(data), "-k", "3", "--cuts", "all", option, value]) == 2
    err = capsys.readouterr().err
    assert name in err and "cutting-plane settings" in err  # not argparse's own refusal


def test_solve_cli_passes_cut_settings_to_the_loop(tiny_files, tmp_path):
    data, cons = tiny_files
    out = tmp_path / "r.json"
    assert main(["solve", str(data), "-c", str(cons), "-k", "3", "-q", "--json", str(out),
                 "--eps-active", "1e-3", "--max-rounds-child", "7", "--max-cuts", "500",
                 "--cut-violation", "2e-4", "--cut-violation-fine", "3e-5", "--loose-tol", "0",
                 "--cut-violation-fine-gap", "5e-4",
                 "--loose-gap-factor", "0.5", "--cut-collect", "first",
                 "--star-leaves", "3"]) == 0
    cp = json.loads(out.read_text())["cp_settings"]
    assert cp["loose_gap_factor"] == 0.5 and cp["collect"] == "first"
    assert cp["star_leaves"] == 3
    assert cp["eps_active"] == 1e-3 and cp["max_rounds_child"] == 7
    assert cp["max_cuts"] == 500 and cp["eps_violation"] == 2e-4 and cp["loose_tol"] is None
    assert cp["eps_violation_fine"] == 3e-5 and cp["fine_gap"] == 5e-4


def test_an_empty_cut_list_is_an_error_not_none(tmp_path, capsys):
    # '' meant 'none' without a word
    from pcsos.cli import main

    data = tmp_path / "d.txt"
    data.write_text("6 2\n0 0\n0 1\n1 0\n5 5\n5 6\n6 5\n")
    assert main(["solve", str(data), "-k", "2", "-q", "--cuts", ""]) == 2
    assert "no cut family given" in capsys.readouterr().err
