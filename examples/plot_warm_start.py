"""
A warm start from your own clustering
=====================================

If you already have a good clustering that obeys the pairs (from an earlier run, a
heuristic of your own, or a colleague), give it as ``init_labels``: it is the first
incumbent, the heuristics start from it, and it proves the pairs feasible, so the
feasibility check is skipped. The solver then only has to prove it optimal, or find
better.
"""

import numpy as np
from sklearn.cluster import KMeans

import pcsos

rng = np.random.default_rng(1)
X = np.vstack([rng.normal(c, 0.7, size=(40, 2)) for c in ((0, 0), (4, 0), (2, 3))])
truth = np.repeat([0, 1, 2], 40)
i, j = rng.integers(len(X), size=(2, 60))
ml = [(a, b) for a, b in zip(i, j) if a != b and truth[a] == truth[b]]
cl = [(a, b) for a, b in zip(i, j) if truth[a] != truth[b]]

# %%
# A start must obey every pair. k-means does not know the pairs, so its clustering may
# break some; pcsos says which.
start = KMeans(n_clusters=3, n_init=10, random_state=0).fit_predict(X)
try:
    pcsos.solve(X, 3, ml, cl, init_labels=start)
except pcsos.InputError as exc:
    print("k-means as a start:", exc)

# %%
# The true classes obey every pair by construction: a valid start.
res = pcsos.solve(X, 3, ml, cl, init_labels=truth, seed=0)
print(f"from the classes: SSE {pcsos.sse(X, truth):.4f} -> {res.objective:.4f}, "
      f"{res.status}, gap {res.gap:.1e}, {res.nodes} node(s)")

# %%
# Here the classes were already an optimal clustering: the solve found nothing better and
# proved it. A start that is not optimal is replaced by what the tree finds.
