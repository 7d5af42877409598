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


def _script(name, monkeypatch):
    import sys

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    monkeypatch.setitem(sys.modules, "instances", _instances())
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _toy_folder(tmp_path, X) -> pathlib.Path:
    """A datasets folder holding 'toy' (the points X, k = 3) with one draw, ml_1_cl_1_0
    (ML 0 1, CL 2 3); returns the results file a run there writes."""
    (tmp_path / "toy" / "constraints").mkdir(parents=True)
    (tmp_path / "toy" / "data.txt").write_text(
        f"{len(X)} 2 3\n" + "".join(f"{a:.17g} {b:.17g}\n" for a, b in X))
    (tmp_path / "toy" / "constraints" / "ml_1_cl_1_0.txt").write_text("ML 0 1\nCL 2 3\n")
    return tmp_path / "rows.jsonl"


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

    import numpy as np

    bench = _script("bench_solve", monkeypatch)
    X = np.random.default_rng(0).normal(size=(10, 2))
    out = _toy_folder(tmp_path, X)
    assert bench.main(["--folder", str(tmp_path), "--datasets", "toy", "--workers", "1",
                       "--time-limit", "120", "--out", str(out)]) == 0
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["instance"] == "toy/ml_1_cl_1_0" and (row["n"], row["k"]) == (10, 3)
    assert (row["ml"], row["cl"]) == (1, 1) and row["status"] == "optimal"
    assert "1 of 1 instances optimal" in capsys.readouterr().out


def test_fresh_draws_follow_the_classes_the_shared_draws_reveal(tmp_path, monkeypatch):
    # issue 51's held-out draws: a drawn pair's kind must be the classes' relation, and a
    # pair the shared draws leave open (point 5 is in no pair) must never be drawn
    import numpy as np

    draws = _script("make_draws", monkeypatch)
    labels = np.array([0, 0, 0, 1, 1, 9, 2, 2])  # 5: its class is unknown to the draws
    src = tmp_path / "src" / "toy"
    (src / "constraints").mkdir(parents=True)
    (src / "data.txt").write_text("8 1 3\n" + "".join(f"{i}\n" for i in range(8)))
    (src / "constraints" / "ml_4_cl_2_0.txt").write_text(
        "ML 0 1\nML 1 2\nML 3 4\nML 6 7\nCL 0 3\nCL 4 6\n")
    (src / "constraints" / "ml_0_cl_1_0.txt").write_text("CL 2 7\n")
    relation, n, open_share = draws.recovered_relation("toy", tmp_path / "src")
    assert n == 8
    for i in range(8):
        for j in range(i + 1, 8):
            expect = None if 5 in (i, j) else bool(labels[i] == labels[j])
            assert relation(i, j) is expect, (i, j)
    assert open_share == 7 / 28
    assert draws.main(["--datasets", "toy", "--source", str(tmp_path / "src"),
                       "--out", str(tmp_path / "out"), "--first", "5", "--draws", "2"]) == 0
    out = tmp_path / "out" / "toy"
    assert (out / "data.txt").read_text() == (src / "data.txt").read_text()
    names = sorted(p.name for p in (out / "constraints").iterdir())
    assert names == ["ml_0_cl_1_5.txt", "ml_0_cl_1_6.txt", "ml_4_cl_2_5.txt",
                     "ml_4_cl_2_6.txt"]
    for path in (out / "constraints").iterdir():
        lines = [line.split() for line in path.read_text().splitlines()]
        ml, cl = (sum(t[0] == kind for t in lines) for kind in ("ML", "CL"))
        assert f"ml_{ml}_cl_{cl}_" in path.name
        for kind, i, j in lines:
            assert labels[int(i)] != 9 and labels[int(j)] != 9
            assert (labels[int(i)] == labels[int(j)]) == (kind == "ML")
    first = (out / "constraints" / "ml_4_cl_2_5.txt").read_text()
    assert first != (out / "constraints" / "ml_4_cl_2_6.txt").read_text()
    draws.main(["--datasets", "toy", "--source", str(tmp_path / "src"),
                "--out", str(tmp_path / "again"), "--first", "5", "--draws", "1"])
    assert (tmp_path / "again" / "toy" / "constraints" / "ml_4_cl_2_5.txt").read_text() == first


def test_bench_solve_time_limit_paper_reads_the_mix_mean(tmp_path, monkeypatch):
    import pathlib as pl

    bench = _script("bench_solve", monkeypatch)
    table = {("glass", "CL", 50): {"time": 539.4}, ("glass", "MLCL", 100): {"time": 454.6}}
    monkeypatch.setattr(bench, "paper_table", lambda: table)
    assert bench.time_limit("glass", pl.Path("ml_0_cl_50_7.txt"), "paper") == 539.4
    assert bench.time_limit("glass", pl.Path("ml_50_cl_50_7.txt"), "paper") == 454.6
    assert bench.time_limit("glass", pl.Path("ml_50_cl_50_7.txt"), "12.5") == 12.5
    with pytest.raises(SystemExit, match="no figure"):
        bench.time_limit("glass", pl.Path("ml_100_cl_0_7.txt"), "paper")


def test_bench_colgen_root_starts_every_configuration_from_one_clustering(tmp_path,
                                                                        monkeypatch):
    # each configuration runs from the same clustering (the same upper bound), and its row
    # names the configuration and carries the engine's profile
    import json

    import numpy as np

    bench = _script("bench_colgen_root", monkeypatch)
    X = np.random.default_rng(1).normal(size=(12, 2))
    data = tmp_path / "toy.txt"
    data.write_text("12 2\n" + "".join(f"{a:.17g} {b:.17g}\n" for a, b in X))
    out = tmp_path / "rows.jsonl"
    assert bench.main(["--data", str(data), "--k", "3", "--heuristic-time", "5",
                       "--config", "", "exact_every=2,box=0.1", "--time-limit", "60",
                       "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["data"], r["k"], r["config"], r["status"]) for r in rows] == [
        ("toy", 3, "", "solved"), ("toy", 3, "exact_every=2,box=0.1", "solved")]
    assert rows[0]["upper_bound"] == rows[1]["upper_bound"]
    assert rows[0]["lower_bound"] == pytest.approx(rows[1]["lower_bound"], rel=1e-6)
    assert all(r["profile"]["exact_pricings"] == len(r["history"]) for r in rows)


def test_bench_lp_nodes_replays_the_same_nodes_under_each_configuration(tmp_path,
                                                                       monkeypatch):
    # the nodes are built once and replayed per configuration: two runs of the defaults
    # process the same nodes the same way (the masters and bounds are deterministic), and
    # each row's totals are its nodes' sums
    import json
    import sys

    import numpy as np

    bench = _script("bench_lp_nodes", monkeypatch)
    # the configurations' processes find replay() by the module's name
    monkeypatch.setitem(sys.modules, "bench_lp_nodes", bench)
    # sizes 7..9 leave this draw's root LP 0.3 % below its optimum: the root branches
    X = np.random.default_rng(1).normal(size=(24, 2))
    data = tmp_path / "toy.txt"
    # (k from the file's header: the rows name the instance's k, not the flag's)
    data.write_text("24 2 3\n" + "".join(f"{a:.17g} {b:.17g}\n" for a, b in X))
    out = tmp_path / "rows.jsonl"
    assert bench.main(["--data", str(data), "--size-min", "7", "--size-max", "9",
                       "--heuristic-time", "1", "--nodes", "2", "--config", "", "",
                       "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["data"], r["n"], r["k"], r["config"]) for r in rows] == [("toy", 24, 3, "")] * 2
    assert len(rows[0]["nodes"]) == 2  # the root branched, and two nodes below it ran
    strip = [[(kind, status, masters, bound) for kind, _, status, masters, bound in r["nodes"]]
             for r in rows]
    assert strip[0] == strip[1]
    for r in rows:
        assert r["masters"] == sum(node[3] for node in r["nodes"])
        assert r["seconds"] == pytest.approx(sum(node[1] for node in r["nodes"]), abs=1e-2)


def test_bench_solve_branching_rule_closes_on_a_clustering_and_picks_the_open_pair(
        tmp_path, monkeypatch):
    # the branching study's alternative rule must leave the node's closing test as it is
    # (a clustering matrix scores below BRANCH_THRESHOLD) and run the tree to the optimum
    import json

    import numpy as np
    from bruteforce import brute_force

    import pcsos.node

    bench = _script("bench_solve", monkeypatch)
    Z = np.zeros((5, 5))
    Z[:3, :3], Z[3:, 3:] = 1 / 3, 1 / 2
    assert bench.normalized(Z)[2] < pcsos.node.BRANCH_THRESHOLD
    Z[0, 3] = Z[3, 0] = 0.2  # r = 0.2 / sqrt(1/6): the most open relation
    assert bench.normalized(Z)[:2] == (0, 3)

    monkeypatch.setattr(pcsos.node, "branching_score", pcsos.node.branching_score)
    X = np.random.default_rng(1).normal(size=(9, 2))
    out = _toy_folder(tmp_path, X)
    assert bench.main(["--branching", "normalized", "--folder", str(tmp_path), "--datasets",
                       "toy", "--workers", "1", "--time-limit", "120", "--out", str(out)]) == 0
    assert pcsos.node.branching_score is bench.normalized
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["branching"] == "normalized" and row["status"] == "optimal"
    best, _ = brute_force(X, 3, ml=[(0, 1)], cl=[(2, 3)])
    assert best * (1 - 1e-9) <= row["objective"] <= best * (1 + 1e-4)
    assert row["lower_bound"] <= best * (1 + 1e-9)
    with pytest.raises(SystemExit) as exc:
        bench.main(["--branching", "nope"])
    assert exc.value.code == 2


def test_bench_solve_most_branching_ranks_by_the_last_row_of_each_draw(monkeypatch):
    # the branching study runs its rules on the draws that branch most: a draw's last row
    # counts (a rerun replaces the first), ties go by name, unchosen and unrun draws never
    bench = _script("bench_solve", monkeypatch)
    rows = [{"instance": "a/x", "nodes": 90}, {"instance": "a/x", "nodes": 3},
            {"instance": "b/y", "nodes": 40}, {"instance": "c/z", "nodes": 40},
            {"instance": "d/w", "nodes": 500}, {"instance": "e/v", "nodes": 1}]
    keys = ["a/x", "b/y", "c/z", "e/v", "f/u"]
    assert bench.most_branching(rows, keys, 2) == ["b/y", "c/z"]
    assert bench.most_branching(rows, keys, 10) == ["b/y", "c/z", "a/x", "e/v"]
    with pytest.raises(SystemExit) as exc:
        bench.main(["--most-branching", "3", "--ranking", "no-such-run", "--summary-only"])
    assert exc.value.code == 2


def test_compare_takes_a_runs_rows_and_a_list_of_runs_in_order(tmp_path, monkeypatch):
    import json

    cmp = _script("compare_solve", monkeypatch)
    rows = [{"run": run, "instance": inst, "seconds": t}
            for run, inst, t in (("a", "x", 1), ("b", "x", 2), ("b", "y", 3), ("a", "x", 4))]
    f = tmp_path / "r.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert {k: r["seconds"] for k, r in cmp.last_rows(f, "a").items()} == {"x": 4}
    # the first run listed that has an instance gives its row, the others fill the rest
    assert {k: r["seconds"] for k, r in cmp.last_rows(f, "a,b").items()} == {"x": 4, "y": 3}
    assert {k: r["seconds"] for k, r in cmp.last_rows(f, "b,a").items()} == {"x": 2, "y": 3}
    assert len(cmp.last_rows(f)) == 2


def test_a_time_limited_side_makes_its_ratio_a_bound_and_the_median_one_too(monkeypatch):
    # a side stopped on its time limit would have taken longer: before stopped, the ratio
    # can only fall; after stopped, it can only rise, and the bound on the median counts
    # it as infinite
    cmp = _script("compare_solve", monkeypatch)

    def row(inst, status, seconds):
        return {"instance": inst, "status": status, "seconds": seconds, "nodes": 1,
                "dataset": "nosuch", "file": "ml_0_cl_50_0.txt"}

    before = {"a": row("a", "optimal", 10), "b": row("b", "time_limit", 100),
              "c": row("c", "optimal", 10), "d": row("d", "time_limit", 10)}
    after = {"a": row("a", "optimal", 5), "b": row("b", "optimal", 20),
             "c": row("c", "time_limit", 30), "d": row("d", "time_limit", 10)}
    res = cmp.compare(before, after, [])
    assert [r["ratio_is"] for r in res["per_instance"]] == [
        "exact", "at_most", "at_least", "unknown"]
    g = res["groups"]["all"]
    assert g["ratio_is"] == {"at_most": 1, "at_least": 1, "unknown": 1}
    # ratios 0.5, 0.2, 3, 1: as measured the median is 0.75; bounded, 0.5, 0.2, inf, inf
    assert g["median_ratio_after_over_before"] == 0.75
    assert g["median_ratio_at_most"] == float("inf")
    del before["c"], before["d"]
    g = cmp.compare(before, after, [])["groups"]["all"]
    assert g["median_ratio_at_most"] == g["median_ratio_after_over_before"] == 0.35
    assert "ratio_is" not in cmp.compare({"a": before["a"]}, after, [])["groups"]["all"]


def test_a_named_run_resumes_its_own_rows_and_measures_again_under_a_new_name(tmp_path):
    # bench_sizes skips what its run already holds; the rows without a name (written before
    # runs were named) are those of a run without --run
    import json

    inst = _instances()
    rows = [{"instance": "x", "v": 1}, {"run": "a", "instance": "y", "v": 2},
            {"run": "b", "instance": "y", "v": 3}, {"run": "a", "instance": "y", "v": 4}]
    f = tmp_path / "r.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert {k: r["v"] for k, r in inst.done_rows(f, run="a").items()} == {"y": 4}
    assert {k: r["v"] for k, r in inst.done_rows(f, run="b").items()} == {"y": 3}
    assert inst.done_rows(f, run="c") == {}
    assert {k: r["v"] for k, r in inst.done_rows(f).items()} == {"x": 1}
