"""Branching rules against the default, on instances that branch (issue 51, the branching
study).

Runs :mod:`bench_solve` (all its options, its rows and its report) with the pair that a
node branches on chosen by ``--rule``, in this process (the tree's workers are threads, so
the rule replaces ``pcsos.node.branching_score`` for every node):

* ``paper``: the default, argmax_{i<j} min(Z_ij, ||Z_i. - Z_j.||^2) (PC-SOS-SDP's rule);
* ``normalized``: argmax_{i<j} min(r_ij, 1 - r_ij) with r_ij = Z_ij / sqrt(Z_ii Z_jj), the
  pair whose relation the relaxation leaves most open whatever the size of its cluster (in
  a clustering matrix r is 0 or 1; the paper's score favours pairs in small clusters,
  whose entries are large).

A rule scores below the node's ``BRANCH_THRESHOLD`` only where Z is (numerically) a
clustering matrix, so the node's closing test is the same under every rule.

    python benchmarks/make_draws.py --datasets glass --first 5 --out /tmp/fresh
    python benchmarks/bench_branching.py --rule normalized --folder /tmp/fresh \\
        --instances glass/ml_0_cl_100_5 --time-limit 600 --workers 2 \\
        --out benchmarks/results/bench_branching.jsonl

The run is named ``branch_RULE`` unless ``--run`` says otherwise.
"""

from __future__ import annotations

import sys

import bench_solve
import numpy as np


def normalized(Z: np.ndarray) -> tuple[int, int, float]:
    """The pair i < j of largest min(r_ij, 1 - r_ij), r_ij = Z_ij / sqrt(Z_ii Z_jj), and its
    score (ties: the first in row-major order)."""
    Zs = 0.5 * (Z + Z.T)
    s = len(Zs)
    if s < 2:
        return -1, -1, -np.inf
    d = np.sqrt(np.maximum(np.diagonal(Zs), 1e-300))
    r = Zs / np.outer(d, d)
    score = np.minimum(r, 1.0 - r)
    score[np.tril_indices(s)] = -np.inf
    i, j = divmod(int(np.argmax(score)), s)
    return i, j, float(score[i, j])


RULES = {"paper": None, "normalized": normalized}


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    rule = "paper"
    if "--rule" in argv:
        at = argv.index("--rule")
        if at + 1 >= len(argv) or argv[at + 1] not in RULES:
            raise SystemExit(f"--rule: one of {', '.join(RULES)}")
        rule = argv[at + 1]
        del argv[at:at + 2]
    if "--run" not in argv:
        argv += ["--run", f"branch_{rule}"]
    if RULES[rule] is not None:
        import pcsos.node

        pcsos.node.branching_score = RULES[rule]
    return bench_solve.main(argv)


if __name__ == "__main__":
    sys.exit(main())
