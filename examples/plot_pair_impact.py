"""
Which pairs cost the most: finding a wrong pair
===============================================

Pairs from people carry mistakes. :func:`pcsos.impact` scores every pair by a proven lower
bound on how much the optimal SSE would drop without it. A wrong pair fights the data, so
it usually costs the most and ranks near the top. Here one cannot-link pair of the shipped
example is replaced by a wrong one: two points of the same blob.
"""

from pathlib import Path

import numpy as np

import pcsos
from pcsos.io import read_constraints, read_data
from pcsos.plot import plot_clusters

# the shipped data, from the repository root or from examples/ (where the docs build runs)
data = Path("data") if Path("data").is_dir() else Path("..", "data")
X = read_data(data / "blobs.txt").X
pairs = read_constraints(data / "blobs_constraints.txt", n=len(X))
# the two nearest points that the shipped pairs do not touch: surely one blob
d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)
np.fill_diagonal(d2, np.inf)
used = {p for pair in pairs.ml + pairs.cl for p in pair}
d2[list(used), :] = d2[:, list(used)] = np.inf
wrong = tuple(int(v) for v in np.unravel_index(np.argmin(d2), d2.shape))
cl = pairs.cl[:-1] + [wrong]
print(f"wrong cannot-link pair: {wrong}, {np.sqrt(d2[wrong]):.3f} apart")

ranked = pcsos.impact(X, 3, pairs.ml, cl, seed=0)
print(f"scored against a clustering of SSE {ranked.objective:.3f} "
      f"(certified optimal: {ranked.optimal})")
for rank, p in enumerate(ranked.pairs[:5], 1):
    print(f"{rank}. {p.type} ({p.i}, {p.j}): the optimum drops by at least {p.score:.3f} "
          "without it")
assert (ranked.pairs[0].i, ranked.pairs[0].j) == tuple(sorted(wrong))

# %%
# The optimum obeys the wrong pair by splitting the two close points.
fig = plot_clusters(X, ranked.labels, pairs.ml, cl, title="with the wrong cannot-link pair")
