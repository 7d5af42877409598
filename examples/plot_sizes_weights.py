"""
Cluster sizes and point weights, against k-means-constrained
============================================================

Some applications fix how many points each cluster takes (balanced teams, capacities) or
weigh the points (a point standing for many). pcsos takes both: ``size_min`` /
``size_max`` bound every cluster's number of points, ``sizes`` fixes them exactly, and
``sample_weight`` weighs the objective, sum_i w_i ||x_i - mu_c||^2. The answer is
certified like any other.

`k-means-constrained <https://pypi.org/project/k-means-constrained/>`_ solves the same
size-bounded problem heuristically (Lloyd's iterations with a min-cost-flow assignment).
pcsos's lower bound says how far its answer is from the optimum: on this draw, not at all.
"""

import numpy as np
from k_means_constrained import KMeansConstrained

import pcsos

rng = np.random.default_rng(3)
# three groups of unequal size: 30, 20 and 10 points
X = np.vstack([rng.normal(c, 0.8, size=(m, 2)) for c, m in (((0, 0), 30), ((3, 0), 20),
                                                             ((1.5, 2.5), 10))])
n, k = len(X), 3

kmc = KMeansConstrained(n_clusters=k, size_min=16, size_max=24, random_state=0).fit(X)
res = pcsos.solve(X, k, size_min=16, size_max=24, seed=0)
print(f"sizes in [16, 24]: k-means-constrained SSE {kmc.inertia_:.4f}, "
      f"sizes {sorted(np.bincount(kmc.labels_).tolist())}")
print(f"                  pcsos SSE {res.objective:.4f} ({res.status}), "
      f"sizes {sorted(np.bincount(res.labels).tolist())}, lower bound {res.lower_bound:.4f}")
print(f"k-means-constrained is within {(kmc.inertia_ - res.lower_bound) / kmc.inertia_:.1e} "
      "(relative) of the optimum, as pcsos's bound proves")

# %%
# Exact sizes: the k cluster sizes, in any order.
res = pcsos.solve(X, k, sizes=[20, 20, 20], seed=0)
print(f"sizes exactly 20: SSE {res.objective:.4f}, gap {res.gap:.1e}, "
      f"sizes {np.bincount(res.labels).tolist()}")

# %%
# Weights: a point of weight 2 counts as two points at the same place. Sizes still count
# points, not weights.
w = np.where(np.arange(n) < 30, 1.0, 2.0)
res = pcsos.solve(X, k, sample_weight=w, seed=0)
print(f"weighted: SSE {res.objective:.4f} = {pcsos.sse(X, res.labels, w):.4f} "
      f"recomputed, gap {res.gap:.1e}")
