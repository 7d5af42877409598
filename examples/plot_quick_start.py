"""
Quick start: a certified clustering from two files
==================================================

Read the shipped example (75 points in the plane, 3 clusters, 10 must-link and 10
cannot-link pairs), solve it to certified optimality and look at the certificate: the
clustering's SSE, a proven lower bound on every clustering that obeys the pairs, and the
gap between them. The same run from the shell is
``pcsos solve data/blobs.txt -c data/blobs_constraints.txt -k 3``.
"""

from pathlib import Path

import pcsos
from pcsos.io import read_constraints, read_data
from pcsos.plot import plot_clusters

# the shipped data, from the repository root or from examples/ (where the docs build runs)
data = Path("data") if Path("data").is_dir() else Path("..", "data")
X = read_data(data / "blobs.txt").X
pairs = read_constraints(data / "blobs_constraints.txt", n=len(X))
print(f"{len(X)} points, {len(pairs.ml)} must-link and {len(pairs.cl)} cannot-link pairs")

res = pcsos.solve(X, k=3, ml=pairs.ml, cl=pairs.cl, seed=0)
print(res)

# %%
# ``objective`` is the SSE of ``labels``; ``lower_bound`` holds for every clustering that
# obeys the pairs, so no clustering is better than ``objective`` by more than ``gap``
# (relative). ``status='optimal'`` means the gap is within ``tol`` (1e-4 by default).
assert res.lower_bound <= res.objective
print(f"certified: no clustering has SSE below {res.lower_bound:.4f}; "
      f"this one has {res.objective:.4f} (gap {res.gap:.2e})")

# %%
# Every pair is obeyed; a broken pair would be drawn thick and red.
fig = plot_clusters(X, res.labels, pairs.ml, pairs.cl, title="blobs, k = 3")
