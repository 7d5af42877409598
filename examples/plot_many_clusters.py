"""
Many clusters: the set-partitioning bound
=========================================

At k >= 10 the Peng-Wei SDP bound is weak and slow, while the set-partitioning LP (each
cluster a column, priced by column generation) is tight. The default engine, ``'auto'``,
takes the LP for k >= 4 in at most 2 dimensions; ``bound_settings={"engine": "sdp"}`` or
``"colgen"`` forces one. Here 120 points in the plane around 10 centres, k = 10.
"""

import numpy as np

import pcsos

rng = np.random.default_rng(0)
centres = rng.uniform(0, 10, size=(10, 2))
X = centres[rng.integers(10, size=120)] + rng.normal(0, 0.8, size=(120, 2))

res = pcsos.solve(X, 10, seed=0)  # engine 'auto': the LP here
print(f"auto (colgen): {res.status}, root gap {res.root_gap:.1e}, {res.nodes} node(s), "
      f"{res.seconds:.1f} s")

# %%
# The SDP engine on the same data, given 5 seconds: its root is not done by then, and the
# gap it certifies is far from the LP's. At k = 20 on 1 000 points its cuts stall near
# 1.5 % however long they run (docs/benchmarks.md).
sdp = pcsos.solve(X, 10, bound_settings={"engine": "sdp"}, time_limit=5, seed=0)
print(f"sdp, 5 s: {sdp.status}, gap {sdp.gap:.1e}")
