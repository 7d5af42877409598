"""`pcsos kcenter` end to end: output, JSON, exit codes, and the shared instances."""

import json

import numpy as np
import pytest

from pcsos.cli import main


def _files(tmp_path, data, cons=""):
    d = tmp_path / "d.txt"
    d.write_text(data)
    c = tmp_path / "c.txt"
    c.write_text(cons)
    return str(d), str(c)


DATA = "6 2 2\n0 0\n0 1\n1 0\n9 9\n9 10\n10 9\n"


def test_kcenter_cli_json(tmp_path, capsys):
    d, c = _files(tmp_path, DATA, "ML 0 1\nCL 0 3\nCL 2 4\n")
    js = tmp_path / "r.json"
    code = main(["kcenter", d, "-c", c, "-k", "2", "--json", str(js)])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "radius" in out.out and "lower bound" in out.out
    rep = json.loads(js.read_text())
    lab = np.array(rep["labels"])
    assert lab[0] == lab[1] and lab[0] != lab[3] and lab[2] != lab[4]
    assert len(rep["centers"]) == 2 and rep["status"] == "solved"
    assert rep["lower_bound"] <= rep["radius"] <= 2 * rep["lower_bound"] * (1 + 1e-8)
    X = np.array([[0, 0], [0, 1], [1, 0], [9, 9], [9, 10], [10, 9]], float)
    r = np.linalg.norm(X - X[np.array(rep["centers"])[lab]], axis=1).max()
    assert rep["radius"] == pytest.approx(r)


def test_kcenter_cli_exit_codes(tmp_path, capsys):
    d, c = _files(tmp_path, DATA, "ML 0 1\nCL 0 1\n")
    assert main(["kcenter", d, "-c", c, "-k", "2"]) == 3
    assert "infeasible" in capsys.readouterr().err
    d, c = _files(tmp_path, DATA, "CL 0 9\n")
    assert main(["kcenter", d, "-c", c, "-k", "2"]) == 2
    d, c = _files(tmp_path, DATA, "CL 0 1\nCL 1 2\nCL 0 2\n")
    assert main(["kcenter", d, "-c", c, "-k", "2"]) == 3


@pytest.mark.slow
def test_kcenter_shared_instances(shared_instances, tmp_path, capsys):
    from pcsos.io import read_constraints, read_data
    from pcsos.kcenter import solve
    from pcsos.problem import pairs_satisfied

    for name in ("iris", "wine"):
        data = read_data(str(shared_instances / name / "data.txt"))
        for cf in sorted((shared_instances / name / "constraints").glob("*_0.txt")):
            cons = read_constraints(str(cf), n=data.n, X=data.X)
            res = solve(data.X, data.k, cons.ml, cons.cl, time_limit=30)
            assert res.success
            assert pairs_satisfied(res.labels, np.reshape(cons.ml, (-1, 2)),
                                   np.reshape(cons.cl, (-1, 2)))
            assert len(res.centers) == data.k
            assert 0 < res.lower_bound <= res.radius


def test_kcenter_cli_json_stdout(tmp_path, capsys):
    d, c = _files(tmp_path, DATA, "CL 0 3\n")
    assert main(["kcenter", d, "-c", c, "-k", "2", "--json", "-"]) == 0
    out = capsys.readouterr()
    rep = json.loads(out.out)  # the human summary went to stderr
    assert rep["k"] == 2 and "radius" in out.err


def test_kcenter_cli_class_column_ari(tmp_path, capsys):
    d = tmp_path / "d.csv"
    d.write_text("x0,x1,class\n0,0,0\n0,1,0\n9,9,1\n9,10,1\n")
    js = tmp_path / "r.json"
    assert main(["kcenter", str(d), "--json", str(js)]) == 0
    rep = json.loads(js.read_text())
    assert rep["k"] == 2 and rep["ari"] == pytest.approx(1.0)
