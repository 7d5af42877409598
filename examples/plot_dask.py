"""
The tree on a Dask cluster
==========================

Beyond one machine, the branch-and-bound nodes run on Dask workers. ``dask='local:2'``
starts a ``LocalCluster`` of two worker processes for the solve and closes it at the end;
give a ``distributed.Client`` (or a scheduler address) to use a cluster of your own. The
data travel once, each node as a small pickle of compact arrays (so use only a cluster you
control, as with any Dask work), and Ctrl-C or a time limit still stops the remote solves
within about a second.
"""

import logging

import numpy as np
from distributed import Client, LocalCluster

import pcsos

rng = np.random.default_rng(2)
X = np.vstack([rng.normal(c, 1.0, size=(30, 2)) for c in ((0, 0), (3, 0), (1.5, 2.5))])
truth = np.repeat([0, 1, 2], 30)
i, j = rng.integers(len(X), size=(2, 40))
ml = [(a, b) for a, b in zip(i, j) if a != b and truth[a] == truth[b]]
cl = [(a, b) for a, b in zip(i, j) if truth[a] != truth[b]]

if __name__ == "__main__":
    # worker processes re-import this script, so the cluster starts under the guard
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None, silence_logs=logging.ERROR) as cluster, \
            Client(cluster) as client:
        res = pcsos.solve(X, 3, ml, cl, dask=client, seed=0)
        print(f"on {len(client.nthreads())} Dask workers: {res.status}, "
              f"SSE {res.objective:.4f}, gap {res.gap:.1e}, {res.nodes} node(s)")

    # the same on this machine's threads gives the same certified optimum
    local = pcsos.solve(X, 3, ml, cl, seed=0)
    print(f"in this process: {local.status}, SSE {local.objective:.4f}")
    assert abs(local.objective - res.objective) <= 1e-4 * local.objective
