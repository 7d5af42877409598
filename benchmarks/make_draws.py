"""Fresh constraint draws of the study's procedure on the shared datasets (issue 51).

The shared folders hold the study's five draws per mix, but not the classes they were
drawn from. The classes' relation on a pair is recovered from the union of those draws:
two points joined by a chain of must-link pairs share a class, and two such groups with a
cannot-link pair between them do not. A fresh draw then follows the study's procedure
(:func:`draw`, the one ``make_ecoli.py`` uses): uniform random pairs of distinct points,
must-link when the classes agree and cannot-link otherwise, each kept while its kind is
short of its count. A pair whose relation the shared draws leave open is drawn again; that
is 0.53 % of glass's pairs, 0.26 % of ECG5000's and none of computers' (printed per
dataset), so the draws are the study's kind of draw up to that share.

    python benchmarks/make_draws.py --datasets glass,ECG5000,computers --first 5 \\
        --out /tmp/fresh
    python benchmarks/bench_solve.py --folder /tmp/fresh --datasets glass \\
        --seeds 5,6,7,8,9 --time-limit paper --run fresh_today

The draws are numbered from ``--first`` (default 5, after the shared 0-4) and seeded
``1000 + draw``; the mixes are the shared folder's. ``data.txt`` is copied unchanged.
"""

from __future__ import annotations

import argparse
import pathlib
import shutil
import sys
from collections.abc import Callable

import numpy as np
from instances import INSTANCES, constraint_files, load, parse_name
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components


def draw(relation: Callable[[int, int], bool | None], n: int, ml: int, cl: int,
         seed: int) -> tuple[list, list]:
    """``ml`` must-link and ``cl`` cannot-link pairs of ``n`` points by the study's
    procedure (module doc); ``relation(i, j)``: whether i and j share a class, None when
    unknown (the pair is drawn again)."""
    rng = np.random.default_rng(1000 + seed)
    seen, out = set(), ([], [])
    while len(out[0]) < ml or len(out[1]) < cl:
        i, j = sorted(int(v) for v in rng.choice(n, 2, replace=False))
        same = relation(i, j)
        if same is None:
            continue
        kind = 0 if same else 1
        if (i, j) not in seen and len(out[kind]) < (ml, cl)[kind]:
            seen.add((i, j))
            out[kind].append((i, j))
    return out


def recovered_relation(dataset: str, folder: pathlib.Path = INSTANCES):
    """(relation, n, share of pairs left open) from the union of the dataset's draws."""
    files = constraint_files(dataset, folder=folder)
    if not files:
        raise SystemExit(f"no constraint files under {folder / dataset}")
    ml, cl = [], []
    for path in files:
        data, cons = load(dataset, path, folder)
        ml.append(np.asarray(cons.ml, dtype=np.int64).reshape(-1, 2))
        cl.append(np.asarray(cons.cl, dtype=np.int64).reshape(-1, 2))
    n, ml, cl = data.n, np.concatenate(ml), np.concatenate(cl)
    graph = coo_matrix((np.ones(len(ml)), (ml[:, 0], ml[:, 1])), shape=(n, n))
    m, group = connected_components(graph, directed=False)
    apart = np.zeros((m, m), dtype=bool)
    apart[group[cl[:, 0]], group[cl[:, 1]]] = True
    apart |= apart.T
    if np.any(np.diag(apart)):
        raise SystemExit(f"{dataset}: a cannot-link pair inside a must-link group")
    known = apart | np.eye(m, dtype=bool)
    sizes = np.bincount(group, minlength=m).astype(float)
    open_share = ((sizes @ (~known) @ sizes) / 2) / (n * (n - 1) / 2)

    def relation(i: int, j: int) -> bool | None:
        a, b = group[i], group[j]
        return True if a == b else (False if apart[a, b] else None)

    return relation, n, float(open_share)


def write_draws(folder: pathlib.Path, mixes, relation, n: int, first: int,
                count: int) -> int:
    """Write ``count`` draws per (ml, cl) mix into ``folder/constraints``; returns files."""
    (folder / "constraints").mkdir(parents=True, exist_ok=True)
    for ml, cl in mixes:
        for seed in range(first, first + count):
            must, cannot = draw(relation, n, ml, cl, seed)
            text = "".join(f"ML {i} {j}\n" for i, j in must)
            text += "".join(f"CL {i} {j}\n" for i, j in cannot)
            (folder / "constraints" / f"ml_{ml}_cl_{cl}_{seed}.txt").write_text(text)
    return len(mixes) * count


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default="glass,ECG5000,computers", help="comma list")
    ap.add_argument("--source", type=pathlib.Path, default=INSTANCES,
                    help="the folder of the study's draws (default: ../shared/instances)")
    ap.add_argument("--out", type=pathlib.Path, required=True,
                    help="the folder to write DATASET/ into (bench_solve.py --folder)")
    ap.add_argument("--first", type=int, default=5, help="first draw number (default: 5)")
    ap.add_argument("--draws", type=int, default=5, help="draws per mix (default: 5)")
    args = ap.parse_args(argv)
    for ds in filter(None, args.datasets.split(",")):
        relation, n, open_share = recovered_relation(ds, args.source)
        mixes = sorted({parse_name(p.name)[:2] for p in constraint_files(ds, folder=args.source)})
        folder = args.out / ds
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(args.source / ds / "data.txt", folder / "data.txt")
        files = write_draws(folder, mixes, relation, n, args.first, args.draws)
        print(f"wrote {folder}: {files} constraint files; pairs the shared draws leave "
              f"open (drawn again): {100 * open_share:.2f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
