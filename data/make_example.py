"""Generate the shipped example instance (fixed seed): three well separated 2-D blobs.

Writes, next to this script:
  blobs.txt              pc-sos-sdp data (header 'n d k'), 75 points, d = 2, k = 3
  blobs_constraints.txt  pc-sos-sdp constraints: 10 ML + 10 CL, consistent with the blobs
  blobs.csv              the same data in the S-MDEClust/PCCC CSV format (x0,x1,class)
  blobs.json             the same constraints in the PCCC JSON format

Run: python data/make_example.py
"""

from __future__ import annotations

import json
import pathlib

import numpy as np

SEED = 20240601
N_PER, K, D = 25, 3, 2
N_ML = N_CL = 10


def make(seed: int = SEED):
    """Return X (75 x 2), the true labels, and ML / CL pairs consistent with them."""
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [6.0, 0.0], [3.0, 5.0]])
    y = np.repeat(np.arange(K), N_PER)
    X = np.round(centres[y] + rng.normal(scale=0.8, size=(K * N_PER, D)), 4)
    ml: set[tuple[int, int]] = set()
    cl: set[tuple[int, int]] = set()
    while len(ml) < N_ML or len(cl) < N_CL:
        i, j = sorted(map(int, rng.choice(len(X), size=2, replace=False)))
        if y[i] == y[j] and len(ml) < N_ML:
            ml.add((i, j))
        elif y[i] != y[j] and len(cl) < N_CL:
            cl.add((i, j))
    return X, y, sorted(ml), sorted(cl)


def main() -> None:
    here = pathlib.Path(__file__).resolve().parent
    X, y, ml, cl = make()
    n, d = X.shape
    with open(here / "blobs.txt", "w") as fh:
        fh.write(f"{n} {d} {K}\n")
        fh.writelines(" ".join(f"{v:g}" for v in row) + "\n" for row in X)
    with open(here / "blobs_constraints.txt", "w") as fh:
        fh.writelines(f"ML {i} {j}\n" for i, j in ml)
        fh.writelines(f"CL {i} {j}\n" for i, j in cl)
    with open(here / "blobs.csv", "w") as fh:
        fh.write(",".join([f"x{c}" for c in range(d)] + ["class"]) + "\n")
        fh.writelines(",".join(f"{v:g}" for v in row) + f",{lab}\n" for row, lab in zip(X, y))
    with open(here / "blobs.json", "w") as fh:
        json.dump({"ml": [list(p) for p in ml], "cl": [list(p) for p in cl], "sml": [],
                   "scl": [], "sml_proba": [], "scl_proba": []}, fh)
        fh.write("\n")


if __name__ == "__main__":
    main()
