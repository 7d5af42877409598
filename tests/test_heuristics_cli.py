"""``pcsos heuristic``: report, result matrix, ARI, exit codes; and the ARI itself."""

import json

import numpy as np
import pytest

from pcsos.cli import main
from pcsos.heuristics.metrics import adjusted_rand_index


@pytest.fixture
def instance(tmp_path):
    rng = np.random.default_rng(0)
    truth = np.repeat([0, 1, 2], 8)
    X = rng.normal(size=(24, 2)) * 0.3 + truth[:, None] * 3.0
    data = tmp_path / "data.txt"
    data.write_text("24 2 3\n" + "".join(f"{a} {b}\n" for a, b in X))
    csv = tmp_path / "data.csv"
    csv.write_text("x0,x1,class\n" + "".join(f"{a},{b},{c}\n" for (a, b), c in zip(X, truth)))
    cons = tmp_path / "cons.txt"
    cons.write_text("ML 0 1\nCL 0 8\nCL 8 16\nCL 0 16\n")
    return tmp_path, data, csv, cons


def test_json_and_result_matrix(instance):
    tmp, data, _, cons = instance
    rep_path, res_path = tmp / "rep.json", tmp / "res.txt"
    rc = main(["heuristic", "ipc-kmeans", str(data), "-c", str(cons), "--seed", "1",
               "--json", str(rep_path), "--result", str(res_path)])
    assert rc == 0
    rep = json.loads(rep_path.read_text())
    for key in ("objective", "labels", "status", "seconds"):
        assert key in rep
    assert rep["status"] == "found" and rep["k"] == 3
    lab = np.array(rep["labels"])
    assert lab[0] == lab[1] and lab[0] != lab[8] and lab[8] != lab[16] and lab[0] != lab[16]
    M = np.loadtxt(res_path, dtype=int)
    assert M.shape == (24, 3) and np.array_equal(M.argmax(axis=1), lab)
    assert "ari" not in rep  # the text format carries no classes


def test_ari_reported_from_class_column(instance, capsys):
    tmp, _, csv, cons = instance
    rep_path = tmp / "rep.json"
    rc = main(["heuristic", "s-mdeclust", str(csv), "-c", str(cons), "--seed", "0",
               "-o", "P=6", "-o", "N_max=10", "--json", str(rep_path)])
    assert rc == 0
    rep = json.loads(rep_path.read_text())
    assert rep["options"] == {"P": 6, "N_max": 10}
    assert rep["ari"] == pytest.approx(1.0)  # well separated blobs
    assert "ARI" in capsys.readouterr().out


def test_exit_codes(instance, tmp_path):
    _, data, _, cons = instance
    assert main(["heuristic", "no-such", str(data)]) == 2
    assert main(["heuristic", "ipc-kmeans", str(data), "-o", "bogus=1"]) == 2
    k4 = tmp_path / "k4.txt"
    k4.write_text("".join(f"CL {i} {j}\n" for i in range(4) for j in range(i + 1, 4)))
    rep = tmp_path / "inf.json"
    assert main(["heuristic", "ipc-kmeans", str(data), "-c", str(k4), "--json",
                 str(rep)]) == 3
    assert json.loads(rep.read_text())["status"] == "infeasible"
    assert main(["heuristic", "ipc-kmeans", str(data), "--time-limit", "0"]) == 1


def test_ari_matches_scikit_learn():
    sk = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(0)
    for _ in range(30):
        n = int(rng.integers(2, 40))
        a, b = rng.integers(0, 4, n), rng.integers(0, 3, n)
        assert adjusted_rand_index(a, b) == pytest.approx(sk.adjusted_rand_score(a, b),
                                                          abs=1e-12)
    assert adjusted_rand_index([0, 0, 1, 1], [5, 5, 2, 2]) == 1.0
    assert adjusted_rand_index([0, 0, 0], [1, 1, 1]) == 1.0


def test_progress_on_stderr_unless_quiet(instance, capsys, monkeypatch):
    import pcsos.cli.heuristic as cli_heur

    tmp, data, _, cons = instance
    monkeypatch.setattr(cli_heur._Progress, "__init__",
                        lambda self, name, t0, interval=0.0: (
                            setattr(self, "name", name), setattr(self, "t0", t0),
                            setattr(self, "interval", 0.0), setattr(self, "last", -1e9))[0])
    rc = main(["heuristic", "s-mdeclust", str(data), "-c", str(cons), "--seed", "1",
               "-o", "N_max=5", "-o", "P=4"])
    err = capsys.readouterr().err
    assert rc == 0
    assert "pcsos heuristic s-mdeclust: n = 24, k = 3" in err
    assert "initial population 4 of 4, best" in err and "generation 1, best" in err
    rc = main(["heuristic", "s-mdeclust", str(data), "-c", str(cons), "--seed", "1", "-q",
               "-o", "N_max=5", "-o", "P=4"])
    assert rc == 0 and capsys.readouterr().err == ""


def test_time_limit_covers_the_whole_command(instance, monkeypatch):
    import pcsos.cli.heuristic as cli_heur

    tmp, data, _, cons = instance
    seen = {}
    real = cli_heur.run_heuristic

    def spy(*a, **kw):
        seen["deadline"] = kw["time_limit"]  # the command's Deadline, made before loading
        seen["left"] = kw["time_limit"].remaining()
        return real(*a, **kw)

    monkeypatch.setattr(cli_heur, "run_heuristic", spy)
    assert main(["heuristic", "cop-kmeans", str(data), "-c", str(cons), "--seed", "1", "-q",
                 "--time-limit", "30"]) == 0
    assert seen["deadline"].limit == 30 and 0 < seen["left"] < 30  # loading took its share
    with pytest.raises(SystemExit) as info:  # argparse refuses it, naming the option
        main(["heuristic", "cop-kmeans", str(data), "--time-limit", "-1"])
    assert info.value.code == 2


@pytest.mark.parametrize("command", [["heuristic", "s-mdeclust"], ["solve"], ["bound"],
                                     ["certify"], ["check"], ["bound", "--verbose"],
                                     ["bound", "--verbose", "--method", "colgen"]])
def test_json_to_stdout_keeps_stdout_pure_json(instance, capsys, command):
    """With --json -, the human-readable report goes to stderr: stdout parses as JSON."""
    _, data, _, cons = instance
    rc = main([*command, str(data), "-c", str(cons), "--json", "-"])
    assert rc == 0
    out, err = capsys.readouterr()
    json.loads(out)
    assert err.strip()  # the report is still shown, on stderr


def test_a_run_without_seed_repeats_from_its_json(instance):
    # the default seed is 0, as in every other command, and the JSON records it
    tmp, data, _, cons = instance
    reps = []
    for t in range(2):
        path = tmp / f"r{t}.json"
        assert main(["heuristic", "cop-kmeans", str(data), "-c", str(cons), "-q",
                     "--json", str(path)]) == 0
        reps.append(json.loads(path.read_text()))
    assert reps[0]["seed"] == 0 and reps[0]["labels"] == reps[1]["labels"]
    assert reps[0]["objective"] == reps[1]["objective"]


@pytest.mark.parametrize("command", [["bound"], ["heuristic", "cop-kmeans"], ["certify"],
                                     ["impact"], ["kcenter"]])
def test_every_command_says_what_its_readers_ignored(tmp_path, command, capsys):
    # a misspelt key is an unconstrained problem: solve and check said so, these did not
    data = tmp_path / "d.txt"
    data.write_text("6 2\n0 0\n0 1\n1 0\n5 5\n5 6\n6 5\n")
    cons = tmp_path / "c.json"
    cons.write_text('{"ml": [[0, 1]], "typo_cl": [[2, 3]]}')
    assert main([*command, str(data), "-c", str(cons), "-k", "2"]) == 0
    assert "note: unknown JSON keys ignored: 'typo_cl'" in capsys.readouterr().err


@pytest.mark.parametrize("argv, needle", [
    (["bound", "--method", "colgen", "--prune-tol", "5"], "--prune-tol: must be in [0, 1)"),
    (["bound", "--prune-tol", "nan"], "--prune-tol: must be >= 0"),
    (["bound", "--method", "colgen", "--max-iter", "0"], "--max-iter: must be >= 1"),
    (["solve", "--time-limit", "abc"], "--time-limit: expected a number of seconds"),
    (["impact", "--time-limit", "-1"], "--time-limit: must be >= 0 seconds"),
])
def test_numeric_flags_are_checked_where_they_are_read(instance, capsys, argv, needle):
    # before: --prune-tol 5 gave a 'target' bound of -427, --max-iter -1 a bound of 77
    # where the LP's is 106.7, and two commands read time limits as plain floats
    _, data, _, _ = instance
    with pytest.raises(SystemExit) as info:
        main([argv[0], str(data), "-k", "3", *argv[1:]])
    assert info.value.code == 2 and needle in capsys.readouterr().err


@pytest.mark.parametrize("command", [["bound"], ["check"], ["kcenter"]])
def test_quiet_prints_nothing_and_still_writes(instance, capsys, command, tmp_path):
    # bound, check and kcenter had no -q (an unrecognised argument, exit 2)
    _, data, _, cons = instance
    out = tmp_path / "r.json"
    assert main([*command, str(data), "-c", str(cons), "-q", "--json", str(out)]) == 0
    assert capsys.readouterr() == ("", "") and json.loads(out.read_text())


@pytest.mark.parametrize("flag, value", [("--sdp-tol", "0"), ("--threads", "0"),
                                         ("--root-threads", "0"), ("--max-nodes", "0"),
                                         ("--checkpoint-every", "0")])
def test_solve_names_the_flag_given(instance, capsys, flag, value):
    # before: '--bound-option.tol: ...', 'threads: ...', 'max_nodes: ...' (the library's
    # names) once the instance had been read
    _, data, _, _ = instance
    with pytest.raises(SystemExit) as info:
        main(["solve", str(data), "-k", "3", flag, value])
    assert info.value.code == 2 and f"argument {flag}: must be" in capsys.readouterr().err


def test_solve_names_an_unknown_sdp_backend_by_its_flag(instance, capsys):
    _, data, _, _ = instance  # before: '--bound-option.backend: ...'
    with pytest.raises(SystemExit) as info:
        main(["solve", str(data), "-k", "3", "--sdp-backend", "foo"])
    assert info.value.code == 2
    assert "argument --sdp-backend: invalid choice: 'foo'" in capsys.readouterr().err
