"""`pcsos check` end to end: report, JSON, and every bad input of the issue with its exit code."""

import json
import pathlib
import subprocess
import sys

import networkx as nx
import pytest

from pcsos.cli import main

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
GOOD = "4 2 2\n0 0\n0 1\n5 5\n5 6\n"


def _files(tmp_path, data=GOOD, cons=""):
    d = tmp_path / "d.txt"
    d.write_text(data)
    c = tmp_path / "c.txt"
    c.write_text(cons)
    return str(d), str(c)


def _run(capsys, *argv):
    code = main(["check", *map(str, argv)])
    out = capsys.readouterr()
    return code, out.out, out.err


# ------------------------------------------------------------------ good input
def test_shipped_example(capsys, tmp_path):
    js = tmp_path / "r.json"
    code, out, err = _run(capsys, DATA / "blobs.txt", "-c", DATA / "blobs_constraints.txt",
                          "--json", js)
    assert code == 0, err
    assert "n = 75, d = 2, k = 3" in out and "feasible" in out
    rep = json.loads(js.read_text())
    for key in ("n", "d", "k", "header", "ml", "cl", "ml_duplicates", "cl_duplicates",
                "super_points", "cl_super", "k2_merged", "verdict", "reason", "message",
                "pairs", "labels", "data_notes", "constraint_notes"):
        assert key in rep
    assert rep["n"] == 75 and rep["k"] == 3 and rep["ml"] == 10 and rep["cl"] == 10
    assert rep["verdict"] == "feasible" and len(set(rep["labels"])) == 3
    assert rep["header"] == "n d k" and rep["k_source"] == "header"


def test_shipped_example_csv_json_agree(capsys, tmp_path):
    js1, js2 = tmp_path / "a.json", tmp_path / "b.json"
    assert _run(capsys, DATA / "blobs.csv", "-c", DATA / "blobs.json", "--json", js1)[0] == 0
    assert _run(capsys, DATA / "blobs.txt", "-c", DATA / "blobs_constraints.txt",
                "--json", js2)[0] == 0
    a, b = json.loads(js1.read_text()), json.loads(js2.read_text())
    for key in ("n", "d", "k", "ml", "cl", "super_points", "cl_super"):
        assert a[key] == b[key]
    assert a["k_source"] == "class column"


def test_report_counts_duplicates_and_k2_inference(capsys, tmp_path):
    d, c = _files(tmp_path, "5 1\n0\n1\n2\n3\n4\n", "CL 0 1\nCL 1 0\nCL 1 2\nML 3 4\nML 4 3\n")
    code, out, _ = _run(capsys, d, "-c", c, "-k", "2", "--json", tmp_path / "r.json")
    assert code == 0
    rep = json.loads((tmp_path / "r.json").read_text())
    assert (rep["ml"], rep["cl"], rep["ml_duplicates"], rep["cl_duplicates"]) == (1, 2, 1, 1)
    assert rep["super_points_before_k2"] == 4 and rep["super_points"] == 3
    assert rep["k2_merged"] == 1 and rep["cl_super"] == 1
    assert "1 duplicates dropped" in out and "1 super-points merged" in out


def test_no_constraint_file_and_json_stdout(capsys, tmp_path):
    d, _ = _files(tmp_path)
    code, out, _ = _run(capsys, d, "--json", "-")
    assert code == 0 and '"verdict": "feasible"' in out


def test_a_header_that_disagrees_with_the_rows_is_an_error(capsys, tmp_path):
    # a file without a header whose first row is integers reads as a header: taking the
    # rows would silently drop that point and shift every pair index after it
    d, _ = _files(tmp_path, "9 3\n0 0\n0 1\n5 5\n")
    code, _, err = _run(capsys, d, "-k", "2")
    assert code == 2 and ":1: the header '9 3' says n = 9, d = 3" in err
    assert "3 data rows of 2 values" in err
    assert "add one above it, '4 2' (4 points of 2 values)" in err
    d, _ = _files(tmp_path, "0 0\n0 1\n1 0\n5 5\n")  # no header: its first point is '0 0'
    code, _, err = _run(capsys, d, "-k", "2")
    assert code == 2 and "add one above it, '4 2' (4 points of 2 values)" in err
    d, _ = _files(tmp_path, "5 2\n0 0\n0 1\n5 5\n")  # a stale count, the width right
    code, _, err = _run(capsys, d, "-k", "2")
    assert code == 2 and "says n = 5," in err


def test_gurobi_backend_option(capsys, tmp_path):
    pytest.importorskip("gurobipy")
    d, c = _files(tmp_path, cons="CL 0 1\n")
    assert _run(capsys, d, "-c", c, "--backend", "gurobi")[0] == 0


# ------------------------------------------------------------------ bad input: exit 2
@pytest.mark.parametrize("data, line, words", [
    ("4 2 2\n0 0\n0 x\n5 5\n5 6\n", 3, "non-numeric value 'x'"),     # malformed row
    ("4 2 2\n0 0\n0 1 2\n5 5\n5 6\n", 3, "ragged row"),              # ragged row
    ("4 2 2\n0 0\n0 1\nnan 5\n5 6\n", 4, "non-finite value 'nan'"),  # NaN
    ("4 two 2\n0 0\n0 1\n5 5\n5 6\n", 1, "bad header"),              # bad header
])
def test_bad_data(capsys, tmp_path, data, line, words):
    d, _ = _files(tmp_path, data)
    code, _, err = _run(capsys, d)
    assert code == 2
    assert f"{d}:{line}:" in err and words in err
    assert "Traceback" not in err


@pytest.mark.parametrize("cons, line, words", [
    ("ML 0 1\nCL 0 4\n", 2, "index out of range 0..3: 'CL 0 4'"),
    ("ML 0 1\n\nCL 2 2\n", 3, "self pair: 'CL 2 2'"),
    ("ML 0 1\nMUST 2 3\n", 2, "unknown constraint type 'MUST'"),
])
def test_bad_constraints(capsys, tmp_path, cons, line, words):
    d, c = _files(tmp_path, cons=cons)
    code, _, err = _run(capsys, d, "-c", c)
    assert code == 2
    assert f"{c}:{line}:" in err and words in err


@pytest.mark.parametrize("k", ["0", "-1"])
def test_k_not_positive(capsys, tmp_path, k):
    d, _ = _files(tmp_path)
    code, _, err = _run(capsys, d, "-k", k)
    assert code == 2 and "-k" in err and "positive" in err


def test_k_missing_and_k_above_n(capsys, tmp_path):
    d, _ = _files(tmp_path, "4 2\n0 0\n0 1\n5 5\n5 6\n")
    code, _, err = _run(capsys, d)
    assert code == 2 and "k is unknown" in err
    code, _, err = _run(capsys, d, "-k", "5")
    assert code == 2 and "exceeds the number of points" in err


def test_usage_error_exit_2(capsys):
    with pytest.raises(SystemExit) as ei:
        main(["check", "--no-such-option"])
    assert ei.value.code == 2


# ------------------------------------------------------------------ infeasible: exit 3
def test_ml_closed_cl(capsys, tmp_path):
    d, c = _files(tmp_path, cons="ML 0 1\nML 1 2\nCL 2 0\n")
    code, _, err = _run(capsys, d, "-c", c)
    assert code == 3
    assert "infeasible" in err and "(0, 2)" in err and "0 - 1 - 2" in err


def test_odd_cycle_k2(capsys, tmp_path):
    d, c = _files(tmp_path, cons="CL 0 1\nCL 1 2\nCL 2 0\n")
    code, _, err = _run(capsys, d, "-c", c, "-k", "2")
    assert code == 3 and "odd cycle" in err
    for p in ("(0, 1)", "(1, 2)", "(0, 2)"):
        assert p in err


def test_cl_clique_larger_than_k(capsys, tmp_path):
    cons = "".join(f"CL {a} {b}\n" for a in range(4) for b in range(a + 1, 4))
    d, c = _files(tmp_path, "5 1\n0\n1\n2\n3\n4\n", cons)
    js = tmp_path / "r.json"
    code, _, err = _run(capsys, d, "-c", c, "-k", "3", "--json", js)
    assert code == 3 and "clique" in err and "(0, 1)" in err and "(2, 3)" in err
    rep = json.loads(js.read_text())
    assert rep["verdict"] == "infeasible" and rep["reason"] == "clique"
    assert len(rep["pairs"]) == 6


def test_k_above_super_points(capsys, tmp_path):
    d, c = _files(tmp_path, cons="ML 0 1\nML 2 3\n")
    code, _, err = _run(capsys, d, "-c", c, "-k", "3")
    assert code == 3 and "only 2 super-points" in err


def test_ilp_infeasible_names_pairs(capsys, tmp_path):
    edges = sorted(nx.mycielski_graph(4).edges())
    cons = "".join(f"CL {a} {b}\n" for a, b in edges)
    d, c = _files(tmp_path, "11 1\n" + "".join(f"{i}\n" for i in range(11)), cons)
    code, _, err = _run(capsys, d, "-c", c, "-k", "3")
    assert code == 3 and "exact ILP" in err and f"({edges[0][0]}, {edges[0][1]})" in err
    # undecided within the time limit: exit 1, said plainly
    code, _, err = _run(capsys, d, "-c", c, "-k", "3", "--time-limit", "0")
    assert code == 1 and "time limit" in err


def test_subprocess_entry_point(tmp_path):
    d, c = _files(tmp_path, cons="CL 0 9\n")
    r = subprocess.run([sys.executable, "-m", "pcsos", "check", d, "-c", c],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 2 and f"{c}:1:" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, "-m", "pcsos", "check", str(DATA / "blobs.txt"),
                        "-c", str(DATA / "blobs_constraints.txt")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "feasible" in r.stdout


@pytest.mark.slow
def test_every_shared_instance_is_feasible(shared_instances, capsys):
    for ds in sorted(p for p in shared_instances.iterdir() if (p / "data.txt").is_file()):
        for cf in sorted((ds / "constraints").glob("*.txt")):
            code, _, err = _run(capsys, ds / "data.txt", "-c", cf)
            assert code == 0, (cf, err)


def test_npz_with_labels_gives_k(capsys, tmp_path):
    import numpy as np

    np.savez(tmp_path / "d.npz", X=np.arange(8.0).reshape(4, 2), y=np.array([0, 0, 1, 1]))
    js = tmp_path / "r.json"
    assert _run(capsys, tmp_path / "d.npz", "--json", js)[0] == 0
    rep = json.loads(js.read_text())
    assert rep["k"] == 2 and rep["k_source"] == "class column" and rep["header"] == "npz"


def test_shipped_constraints_agree_with_true_classes():
    from pcsos.io import read_constraints, read_data
    from pcsos.problem import pairs_satisfied

    df = read_data(DATA / "blobs.csv")
    for name in ("blobs_constraints.txt", "blobs.json"):
        c = read_constraints(DATA / name, n=df.n)
        assert len(c.ml) == 10 and len(c.cl) == 10
        assert pairs_satisfied(df.classes, c.ml, c.cl)
    X_txt = read_data(DATA / "blobs.txt").X
    assert (X_txt == df.X).all() and df.n <= 90


def test_write_json_is_numpy_aware(capsys, tmp_path):
    import numpy as np

    from pcsos.io import write_json

    obj = {"a": np.arange(3), "b": np.float64(np.inf), "c": np.int32(4), "d": (1.5, np.nan),
           "e": pathlib.Path("x/y"), "f": np.bool_(True)}
    write_json(tmp_path / "o.json", obj)
    back = json.loads((tmp_path / "o.json").read_text())
    assert back == {"a": [0, 1, 2], "b": None, "c": 4, "d": [1.5, None], "e": "x/y", "f": True}
    write_json("-", {"x": np.int64(1)})
    assert json.loads(capsys.readouterr().out) == {"x": 1}


def test_the_clustering_file_of_certify_and_impact_is_named_in_its_error(capsys, tmp_path):
    d, c = _files(tmp_path, cons="CL 0 1\n")
    lab = tmp_path / "lab.txt"
    lab.write_text("0\n0\n1\n1\n")  # puts 0 and 1, cannot-linked, together
    from pcsos.cli import main

    for command in ("certify", "impact"):
        capsys.readouterr()
        assert main([command, str(d), "-c", str(c), "-k", "2", "--labels", str(lab)]) == 2
        err = capsys.readouterr().err
        assert f"{lab}: the clustering breaks 1 pair(s): cannot-link (0, 1)" in err, err
