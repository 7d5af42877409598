"""Constraint impact: each pair's score is a proven lower bound on the drop of the optimum
without it (checked by brute force), exact with ``exact=True``, and a flipped pair ranks
first."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from bruteforce import brute_force

from pcsos.errors import InputError, UndecidedError
from pcsos.pair_impact import impact

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _case(seed: int, n: int = 10, k: int = 3, n_ml: int = 3, n_cl: int = 4):
    rng = np.random.default_rng(seed)
    truth = np.arange(n) % k
    X = rng.normal(size=(n, 2)) + 2.0 * truth[:, None]
    ml, cl, seen = [], [], set()
    while len(ml) + len(cl) < n_ml + n_cl:  # distinct pairs: removing one removes it all
        i, j = sorted(map(int, rng.choice(n, 2, replace=False)))
        if (i, j) in seen:
            continue
        seen.add((i, j))
        (ml if len(ml) < n_ml else cl).append((i, j))
    return X, k, ml, cl


def _true_drops(X, k, ml, cl, opt):
    out = {}
    for kind, pairs in (("ML", ml), ("CL", cl)):
        for t, (i, j) in enumerate(pairs):
            rest = pairs[:t] + pairs[t + 1:]
            o2, _ = brute_force(X, k, rest if kind == "ML" else ml, rest if kind == "CL" else cl)
            out[(kind, min(i, j), max(i, j))] = opt - o2
    return out


@pytest.mark.parametrize("seed", range(8))
def test_scores_never_exceed_the_true_drop(seed):
    X, k, ml, cl = _case(seed)
    opt, lab = brute_force(X, k, ml, cl)
    if lab is None:
        pytest.skip("this draw has no feasible clustering")
    true = _true_drops(X, k, ml, cl, opt)
    res = impact(X, k, ml, cl, labels=lab)
    assert len(res.pairs) == len(true)  # duplicates aside, one row per pair
    for p in res.pairs:
        assert 0.0 <= p.score <= true[(p.type, p.i, p.j)] + 1e-9 * max(1.0, opt)
        assert p.dual >= 0.0
    scores = [p.score for p in res.pairs]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("seed", range(3))
def test_exact_scores_are_the_true_drops(seed):
    X, k, ml, cl = _case(seed)
    opt, lab = brute_force(X, k, ml, cl)
    if lab is None:
        pytest.skip("this draw has no feasible clustering")
    true = _true_drops(X, k, ml, cl, opt)
    res = impact(X, k, ml, cl, exact=True, workers=1)
    assert res.optimal
    for p in res.pairs:
        assert p.score == pytest.approx(true[(p.type, p.i, p.j)], abs=1e-4 * opt)


def test_a_flipped_pair_ranks_first():
    rng = np.random.default_rng(0)
    n, k = 30, 3
    truth = np.arange(n) % k
    X = rng.normal(scale=0.5, size=(n, 2)) + 4.0 * truth[:, None]
    same = [(i, j) for i in range(n) for j in range(i + 1, n) if truth[i] == truth[j]]
    diff = [(i, j) for i in range(n) for j in range(i + 1, n) if truth[i] != truth[j]]
    pick = rng.permutation(len(same))[:6]
    ml = [same[t] for t in pick[:5]]
    cl = [diff[t] for t in rng.permutation(len(diff))[:5]] + [same[pick[5]]]  # one wrong
    res = impact(X, k, ml, cl, workers=1)
    assert (res.pairs[0].type, res.pairs[0].i, res.pairs[0].j) == ("CL", *same[pick[5]])
    assert res.pairs[0].score > 10 * max(res.pairs[1].score, 1e-12)


def test_bad_inputs():
    X, k, ml, cl = _case(0)
    with pytest.raises(InputError, match="unknown heuristic"):
        impact(X, k, ml, cl, heuristic="nope")
    with pytest.raises(InputError, match="labels: expected 10 labels"):
        impact(X, k, ml, cl, labels=[0, 1, 2])


def test_cli_json(tmp_path):
    data = ROOT / "data" / "blobs.txt"
    cons = tmp_path / "c.txt"
    lines = (ROOT / "data" / "blobs_constraints.txt").read_text().splitlines()
    cons.write_text("\n".join(lines + ["CL 0 1"]) + "\n")  # 0 and 1: one blob in the data
    js = tmp_path / "i.json"
    p = subprocess.run([sys.executable, "-m", "pcsos", "impact", str(data), "-c", str(cons),
                        "-k", "3", "--json", str(js), "--top", "3"], capture_output=True,
                       text=True, cwd=ROOT, timeout=300)
    assert p.returncode == 0, p.stderr
    out = json.loads(js.read_text())
    pairs = out["pairs"]
    assert len(pairs) == len(lines) + 1
    assert all(set(q) >= {"i", "j", "type", "score"} for q in pairs)
    assert [q["score"] for q in pairs] == sorted((q["score"] for q in pairs), reverse=True)
    assert (pairs[0]["type"], pairs[0]["i"], pairs[0]["j"]) == ("CL", 0, 1)
    assert "   1   CL      0      1" in p.stdout


def test_the_package_exports_impact():
    import pcsos

    assert pcsos.impact is impact  # pcsos.impact(...) is the function, not a module


def test_time_limit_is_the_whole_runs(monkeypatch):
    # the first solve may take half of it, each re-solve an equal share of what is left:
    # a re-solve that runs to its limit cannot starve the pairs after it
    import pcsos.pair_impact as pi

    X, k, ml, cl = _case(1)
    seen: list[tuple[str, float]] = []
    real_solve, real_value = pi.solve_instance, pi._value_without

    def solve(inst, time_limit=None, **kw):
        seen.append(("first", time_limit))
        return real_solve(inst, time_limit=None, **kw)

    def value_without(inst, lab, heuristic, exact, seed, share, *rest):
        seen.append(("pair", share.remaining()))
        return real_value(inst, lab, heuristic, exact, seed, share, *rest)

    monkeypatch.setattr(pi, "solve_instance", solve)
    monkeypatch.setattr(pi, "_value_without", value_without)
    res = impact(X, k, ml, cl, time_limit=1000.0, workers=1)
    total = len(ml) + len(cl)
    assert len(res.pairs) == total and not res.interrupted
    assert res.status == "done" and res.success and res.message == f"{total} pairs scored"
    assert seen[0][0] == "first" and 0 < seen[0][1] <= 500.0
    shares = [s for what, s in seen[1:] if what == "pair"]
    assert len(shares) == total
    for done, s in enumerate(shares):
        assert 0 < s <= 1000.0 / (total - done)


def test_a_spent_time_limit_scores_no_pair():
    X, k, ml, cl = _case(1)
    opt, lab = brute_force(X, k, ml, cl)
    res = impact(X, k, ml, cl, labels=lab, time_limit=0)
    assert res.pairs == [] and res.interrupted and res.total == len(ml) + len(cl)
    assert res.status == "time_limit" and not res.success
    assert res.notes[-1] == f"time limit of 0 s reached: 0 of {res.total} pairs scored"
    assert res.message.endswith(res.notes[-1])
    with pytest.raises(InputError, match="time_limit"):
        impact(X, k, ml, cl, labels=lab, time_limit=-1)
    # spent before the first solve: its best clustering, or UndecidedError; never an
    # error about a time limit of 0 that the user never gave
    try:
        res = impact(X, k, ml, cl, time_limit=1e-9)
    except UndecidedError:
        return
    assert res.pairs == [] and res.interrupted


def _solves(monkeypatch) -> list[dict]:
    """The keywords of every solve that impact starts, recorded as it runs."""
    import pcsos.pair_impact as pi

    calls: list[dict] = []
    real = pi.solve_instance

    def solve(inst, **kw):
        calls.append(kw)
        return real(inst, **kw)

    monkeypatch.setattr(pi, "solve_instance", solve)
    return calls


def test_the_seed_reaches_every_solve(monkeypatch):
    X, k, ml, cl = _case(2)
    calls = _solves(monkeypatch)
    impact(X, k, ml, cl, exact=True, seed=5, workers=1)
    assert len(calls) == 1 + len(ml) + len(cl) and {c.get("seed") for c in calls} == {5}


def test_cli_workers_reach_every_solve(monkeypatch, tmp_path):
    from pcsos.cli import main

    X, k, ml, cl = _case(3)
    (tmp_path / "d.txt").write_text(f"{len(X)} 2\n" + "".join(
        f"{float(a)!r} {float(b)!r}\n" for a, b in X))
    (tmp_path / "c.txt").write_text("".join(f"ML {i} {j}\n" for i, j in ml)
                                    + "".join(f"CL {i} {j}\n" for i, j in cl))
    calls = _solves(monkeypatch)
    assert main(["impact", str(tmp_path / "d.txt"), "-c", str(tmp_path / "c.txt"), "-k",
                 str(k), "--exact", "--workers", "1", "-q"]) == 0
    assert len(calls) == 1 + len(ml) + len(cl) and {c.get("workers") for c in calls} == {1}
    with pytest.raises(SystemExit) as ei:  # argparse's usage error
        main(["impact", str(tmp_path / "d.txt"), "-k", str(k), "--workers", "0"])
    assert ei.value.code == 2
