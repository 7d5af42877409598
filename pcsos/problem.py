"""The problem model: a validated instance and its super-point (must-link shrunk) form.

An :class:`Instance` is exactly what the user gave, validated, with pairs deduplicated and
oriented (i < j). A :class:`Problem` is the instance in super-point space (spec §2): every
must-link component is one super-point with mass ``e_i`` (its number of points, or the sum
of their weights) and (weighted) row sum ``w_i`` of the centred data, cannot-link pairs are
mapped onto super-points, and for k = 2 every colour class of a cannot-link component is
merged. Branching decisions (:meth:`Problem.merge`,
:meth:`Problem.add_cl`) return a new problem and leave the parent unchanged; the child's
``parent_map`` says where each parent super-point went, so that cuts and warm starts are
re-indexed by the same map.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from functools import cached_property

import numpy as np
from scipy.sparse import coo_matrix, csr_matrix
from scipy.sparse.csgraph import connected_components

from pcsos.errors import InfeasibleError, InputError

__all__ = ["Instance", "Problem", "make_instance", "sse", "bipartition", "pairs_satisfied",
           "group_sums", "canonical_labels", "check_start", "cl_adjacency"]


def _as_pairs(pairs, name: str, n: int) -> tuple[np.ndarray, int]:
    """Validate, orient (i < j) and deduplicate pairs; return them sorted and the duplicates."""
    if pairs is None:
        return np.empty((0, 2), dtype=np.int64), 0
    if isinstance(pairs, (str, bytes, dict)):
        raise InputError(f"{name} must be an iterable of (i, j) pairs, got "
                         f"{type(pairs).__name__}", source=name)
    if not isinstance(pairs, (np.ndarray, list, tuple)):
        # a set or a generator of pairs, as the docs' "iterable" allows (numpy reads one as
        # a single object)
        try:
            pairs = list(pairs)
        except TypeError:
            raise InputError(f"{name} must be an iterable of (i, j) pairs, got "
                             f"{type(pairs).__name__}", source=name) from None
    arr = np.asarray(pairs, dtype=object)
    if arr.size == 0:
        return np.empty((0, 2), dtype=np.int64), 0
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise InputError(f"{name} must be a sequence of (i, j) pairs, got shape {arr.shape}",
                         source=name)
    out = np.empty(arr.shape, dtype=np.int64)
    for t, (i, j) in enumerate(arr):
        if _integer(i) is None or _integer(j) is None:
            raise InputError(f"pair #{t} ({i!r}, {j!r}): indices must be integers",
                             source=name)
        i, j = _integer(i), _integer(j)
        if not (0 <= i < n and 0 <= j < n):
            raise InputError(f"pair #{t} ({_short(i)}, {_short(j)}): index out of range "
                             f"0..{n - 1}", source=name)
        if i == j:
            raise InputError(f"pair #{t} ({i}, {j}): self pair", source=name)
        out[t] = (min(i, j), max(i, j))
    uniq = np.unique(out, axis=0)
    return uniq, len(out) - len(uniq)


@dataclass(frozen=True, eq=False)
class Instance:
    """A validated user instance: data, k, pairs, and optionally weights and sizes.

    Made by :func:`make_instance`, which checks every field; the arrays are read-only, so
    the caller's later changes cannot invalidate a solve.

    Attributes
    ----------
    X : ndarray of shape (n, d), float64
        The data (a copy).
    k : int
        Number of clusters.
    ml, cl : ndarray of shape (m, 2), int64
        Must-link and cannot-link pairs, each oriented (i < j) and deduplicated.
    ml_duplicates, cl_duplicates : int
        How many repeated pairs the deduplication dropped.
    weights : ndarray of shape (n,) or None
        Positive finite point weights (None: every point weighs 1, also when all given
        weights are 1); the objective is sum_i w_i ||x_i - mu_c||^2 with mu_c the weighted
        mean.
    size_min, size_max : int or None
        Bounds on every cluster's number of points (None: none).
    sizes : tuple of int or None
        The multiset of exact cluster sizes, k integers summing to n, in decreasing order
        (clusters are interchangeable). Sizes count points, not weights.

    Examples
    --------
    >>> import pcsos
    >>> inst = pcsos.make_instance([[0.0], [1], [5]], 2, ml=[(1, 0), (0, 1)])
    >>> inst.ml.tolist(), inst.ml_duplicates, inst.n, inst.d
    ([[0, 1]], 1, 3, 1)
    >>> inst.objective([0, 0, 1])
    0.5
    """

    X: np.ndarray
    k: int
    ml: np.ndarray
    cl: np.ndarray
    ml_duplicates: int = 0
    cl_duplicates: int = 0
    weights: np.ndarray | None = None
    size_min: int | None = None
    size_max: int | None = None
    sizes: tuple[int, ...] | None = None

    @property
    def has_sizes(self) -> bool:
        """True when any size constraint is set."""
        return self.size_min is not None or self.size_max is not None or self.sizes is not None

    def size_bounds(self) -> tuple[int, int]:
        """The smallest and largest size any cluster may have (1 and n when unconstrained)."""
        if self.sizes is not None:
            return min(self.sizes), max(self.sizes)
        return (1 if self.size_min is None else max(1, self.size_min),
                self.n if self.size_max is None else self.size_max)

    def sizes_ok(self, labels) -> bool:
        """True when the clustering ``labels`` (original points) meets the size constraints."""
        if not self.has_sizes:
            return True
        counts = np.bincount(np.asarray(labels, dtype=np.int64))
        counts = counts[counts > 0]
        if self.sizes is not None:
            return sorted(counts.tolist(), reverse=True) == list(self.sizes)
        lo, hi = self.size_bounds()
        return bool(counts.min() >= lo and counts.max() <= hi)

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def total_weight(self) -> float:
        """The sum of the point weights (n without weights)."""
        return float(self.n if self.weights is None else math.fsum(self.weights))

    @property
    def scatter(self) -> float:
        """The total scatter: the (weighted) SSE of all points about their mean, the
        objective of a single cluster; every clustering's objective is at most this."""
        return _sse(self.X, np.zeros(self.n, dtype=np.int64), self.weights)

    @property
    def max_cluster_points(self) -> int:
        """The most points any cluster can hold: at most ``size_max`` (the largest of exact
        ``sizes``), and the other k - 1 clusters hold at least ``size_min`` (1 without
        sizes) each."""
        lo, hi = self.size_bounds()
        return int(min(hi, self.n - (self.k - 1) * lo))

    @property
    def max_cluster_weight(self) -> float:
        """An upper bound on the weight of any cluster: of its at most
        :attr:`max_cluster_points` points (n - k + 1 without sizes), the largest weights.
        The clique cuts' right-hand side is its inverse (docs/cuts.md)."""
        top = self.max_cluster_points
        if self.weights is None:
            return float(top)
        # the largest weights, summed with one rounding, then two ulps up: 1 / this,
        # rounded, stays below the exact inverse, so a clique cut never cuts off a clustering
        total = math.fsum(np.sort(self.weights)[self.n - top:])
        return float(np.nextafter(np.nextafter(total, math.inf), math.inf))

    def objective(self, labels) -> float:
        """The objective of the clustering ``labels`` (one label per point) computed from
        the data: :func:`sse` with this instance's weights."""
        return _sse(self.X, _one_label_each(labels, self.n), self.weights)

    @property
    def d(self) -> int:
        return self.X.shape[1]


def make_instance(X, k: int, ml: Iterable = (), cl: Iterable = (), *, weights=None,
                  size_min: int | None = None, size_max: int | None = None,
                  sizes=None) -> Instance:
    """Validate data, k, pairs and the optional weights and sizes into an :class:`Instance`.

    Parameters
    ----------
    X : array_like of shape (n, d) or (n,)
        The points: finite numbers, not so large that their squares overflow. A 1-D array
        is n points in one dimension.
    k : int
        Number of clusters, 1 <= k <= n.
    ml, cl : iterable of (i, j) pairs
        Must-link and cannot-link pairs of 0-based indices in range, no self pairs.
    weights : array_like of shape (n,), optional
        Positive finite point weights.
    size_min, size_max : int, optional
        Bounds on every cluster's number of points.
    sizes : sequence of k int, optional
        Exact cluster sizes: k positive integers summing to n, in any order; not with
        ``size_min`` / ``size_max``.

    Returns
    -------
    Instance
        The validated instance; the data is copied (float64, read-only) so that later
        changes by the caller cannot invalidate a solve.

    Raises
    ------
    InputError
        Naming the offending value: a non-finite value (with its row and column), an
        index out of range, a self pair, k out of range, a weight that is not positive and
        finite or of the wrong length, size bounds that no partition of n points into k
        non-empty clusters meets (k * size_max < n, k * size_min > n,
        size_min > size_max), or ``sizes`` that are not k positive integers summing to n.

    Examples
    --------
    >>> import pcsos
    >>> pcsos.make_instance([[0.0, 1.0], [2.0, 3.0]], 2, cl=[(0, 1)]).cl.tolist()
    [[0, 1]]
    >>> pcsos.make_instance([[0.0], [float("nan")]], 1)
    Traceback (most recent call last):
    ...
    pcsos.errors.InputError: X: non-finite value nan at row 1, column 0 (1 in all)
    """
    Xa = _as_points(X)
    check_magnitude(Xa)
    k = _whole(k, "k")
    n = Xa.shape[0]
    if not 1 <= k <= n:
        raise InputError(f"k must satisfy 1 <= k <= n = {n}, got {k}", source="k")
    mla, mld = _as_pairs(ml, "ml", n)
    cla, cld = _as_pairs(cl, "cl", n)
    w = _as_weights(weights, n)
    if w is not None:
        check_magnitude(Xa, weights=w)
    size_min, size_max, sizes = _as_sizes(size_min, size_max, sizes, n, k)
    Xa.setflags(write=False)
    mla.setflags(write=False)
    cla.setflags(write=False)
    return Instance(Xa, k, mla, cla, mld, cld, w, size_min, size_max, sizes)


def check_magnitude(X: np.ndarray, source: str = "X", weights: np.ndarray | None = None
                    ) -> None:
    """Refuse data so large that the bound's arithmetic overflows (an InputError naming
    the value and ``source``). Every path centres the data and sums squares, and the SDP
    squares those again: its matrix C = W W^T has a Frobenius norm up to n c0, with c0 the
    total scatter, and its residuals and eigensolvers sum squares of C's entries, so
    (n c0)^2 must stay finite. Data at 1e80 (75 points) ended in an internal LinAlgError,
    at 1e100 in inf and nan. With ``weights`` their total takes n's place (the weighted
    sums). Data are never rescaled, so the user has to. The CLI calls it on the file it
    read, and :func:`make_instance` on every instance."""
    if not X.size:
        return
    n, d = X.shape if X.ndim == 2 else (X.shape[0], 1)
    with np.errstate(over="ignore"):
        total = float(n) if weights is None else float(np.sum(weights))
    if not math.isfinite(total):
        raise InputError("the weights sum past the largest double (1.8e308): rescale them",
                         source="sample_weight")
    # c0 <= total d (2 max|x|)^2 and ||C||_F <= total c0, so (total c0)^2 < max when
    # |x| < max^(1/4) / (2 total sqrt(d))
    limit = sys.float_info.max ** 0.25 / (2.0 * total * math.sqrt(d))
    absX = np.abs(X)
    if absX.max() > limit:
        r, c = map(int, np.unravel_index(int(np.argmax(absX)), X.shape))
        size = (f"n x d = {n} x {d}" if weights is None
                else f"n x d = {n} x {d} and weights summing to {total:.3g}")
        raise InputError(f"value {X[r, c]:g} at row {r}, column {c} (0-based) is too large: the "
                         f"squares of this data's sums of squares overflow double precision "
                         f"(|x| must stay below {limit:.3g} for {size}); rescale the data"
                         + ("" if weights is None else " or the weights"), source=source)


def _real_array(values, what: str, source: str) -> np.ndarray:
    """A float64 copy of ``values`` when they are real numbers, else an InputError saying
    ``what``: a conversion to float64 would drop a complex part (with only a warning), read
    strings ('1.5') and dates as numbers, and ignore a masked array's mask."""
    if isinstance(values, np.ma.MaskedArray) and np.ma.is_masked(values):
        raise InputError(f"{what}: masked values (fill or drop them first)", source=source)
    try:
        raw = np.asarray(values)
    except (TypeError, ValueError) as exc:  # ragged nested lists
        raise InputError(f"{what}: {exc}", source=source) from None
    if raw.dtype.kind not in "biufO":
        raise InputError(f"{what} (dtype {raw.dtype})", source=source)
    # an object array: pandas' mix of float and bool columns (get_dummies), Decimals; a
    # bool is 0 or 1 there as in a bool array
    if raw.dtype.kind == "O" and not all(isinstance(v, (numbers.Real, np.bool_, Decimal))
                                         for v in raw.ravel()):
        raise InputError(f"{what} (a value that is not a real number)", source=source)
    try:
        return np.array(raw, dtype=np.float64, copy=True)
    except (TypeError, ValueError, OverflowError) as exc:  # OverflowError: int of 400 digits
        raise InputError(f"{what}: {exc}", source=source) from None


def _as_points(X) -> np.ndarray:
    """``X`` as a float64 (n, d) copy (a 1-D array: one column), else an InputError naming
    what is wrong: not real numbers, no rows or columns, a non-finite value (its place)."""
    Xa = _real_array(X, "data is not a numeric matrix", "X")
    if Xa.ndim == 1:
        Xa = Xa[:, None]
    if Xa.ndim != 2 or Xa.shape[0] == 0 or Xa.shape[1] == 0:
        raise InputError(f"data must be a non-empty n x d matrix, got shape {Xa.shape}",
                         source="X")
    bad = ~np.isfinite(Xa)
    if bad.any():
        r, c = map(int, np.argwhere(bad)[0])
        raise InputError(f"non-finite value {Xa[r, c]} at row {r}, column {c} "
                         f"({int(bad.sum())} in all)", source="X")
    return Xa


def _as_weights(weights, n: int) -> np.ndarray | None:
    if weights is None:
        return None
    w = _real_array(weights, "weights are not numbers", "sample_weight")
    if w.ndim != 1:  # one weight per point: a (n, 1) or (2, n/2) array is not read as one
        raise InputError(f"weights must be one number per point (a 1-D array), got shape "
                         f"{w.shape}", source="sample_weight")
    if len(w) != n:
        raise InputError(f"{len(w)} weights for {n} points", source="sample_weight")
    # a subnormal weight has lost most of its digits, and its products underflow to 0
    bad = ~(np.isfinite(w) & (w >= np.finfo(np.float64).tiny))
    if bad.any():
        i = int(np.argmax(bad))
        why = ("not finite" if not np.isfinite(w[i]) else "zero" if w[i] == 0
               else "negative" if w[i] < 0 else "below 2.2e-308 (subnormal)")
        raise InputError(f"weight {float(w[i])!r} of point {i} is {why}: weights must be "
                         f"positive, normal and finite ({int(bad.sum())} such weights)",
                         source="sample_weight")
    if np.all(w == 1.0):
        return None  # unit weights are no weights: the same problem, bit for bit
    w.setflags(write=False)
    return w


def _integer(v) -> int | None:
    """``v`` as an int when it is a whole number (3, 3.0, numpy's), else None: not a bool,
    a string ('2', ' 1'), a complex or nan."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
        return None
    if isinstance(v, numbers.Integral):  # exact, however large (float() of 10**400 fails)
        return int(v)
    try:
        return int(v) if float(v).is_integer() else None
    except (OverflowError, ValueError):
        return None


def _short(i: int) -> str:
    """An integer for a message: a 400-digit one is not printed whole."""
    text = str(i)
    return text if len(text) <= 24 else f"{text[:12]}... ({len(text)} digits)"


def _whole(v, name: str) -> int:
    out = _integer(v)
    if out is None:
        raise InputError(f"{name} must be an integer, got {v!r}", source=name)
    return out


def _as_sizes(size_min, size_max, sizes, n: int, k: int):
    if sizes is not None:
        if size_min is not None or size_max is not None:
            raise InputError("give sizes, or size_min / size_max, not both", source="sizes")
        try:
            vals = [_whole(v, "sizes") for v in sizes]
        except TypeError:
            raise InputError(f"sizes must be a list of k integers, got {sizes!r}",
                             source="sizes") from None
        if len(vals) != k:
            raise InputError(f"sizes has {len(vals)} entries, k = {k} clusters need k",
                             source="sizes")
        if min(vals) < 1:
            raise InputError(f"every size must be >= 1, got {min(vals)}", source="sizes")
        if sum(vals) != n:
            raise InputError(f"sizes sum to {sum(vals)}, not to the n = {n} points",
                             source="sizes")
        return None, None, tuple(sorted(vals, reverse=True))
    lo = None if size_min is None else _whole(size_min, "size_min")
    hi = None if size_max is None else _whole(size_max, "size_max")
    if lo is not None and lo < 0:
        raise InputError(f"size_min must be >= 0, got {lo}", source="size_min")
    if hi is not None and hi < 1:
        raise InputError(f"size_max must be >= 1, got {hi}", source="size_max")
    if lo is not None and hi is not None and lo > hi:
        raise InputError(f"size_min = {lo} > size_max = {hi}", source="size_min")
    if hi is not None and k * hi < n:
        raise InputError(f"k * size_max = {k} * {hi} = {k * hi} < n = {n}: no partition of "
                         "the points meets size_max", source="size_max")
    if lo is not None and k * lo > n:
        raise InputError(f"k * size_min = {k} * {lo} = {k * lo} > n = {n}: no partition of "
                         "the points meets size_min", source="size_min")
    return lo, hi, None


#: above this many entries (k x n) the one-hot product of :func:`group_sums` is not built
ONE_HOT_MAX = 1 << 20


def group_sums(labels: np.ndarray, M: np.ndarray, k: int) -> np.ndarray:
    """Row sums of ``M`` per label 0..k-1, a (k, d) array, in O(n d + k d) memory.

    Small cases use a dense one-hot matrix product (fastest: 13 us at n = 214, k = 6); when
    k x n exceeds :data:`ONE_HOT_MAX` (the super-points of a large instance: k ~ n, where
    the one-hot matrix took 8 n^2 bytes, 3.2 GB at n = 20 000) one ``np.bincount`` per
    column for narrow data, a sparse one-hot product for wide data (``np.add.at`` is about
    10x slower than either).
    """
    labels = np.asarray(labels, dtype=np.int64)
    M = np.asarray(M, dtype=np.float64)
    n = len(labels)
    if M.ndim == 1:
        return np.bincount(labels, weights=M, minlength=k)
    if k * n <= ONE_HOT_MAX:
        G = np.zeros((k, n))
        G[labels, np.arange(n)] = 1.0
        return G @ M
    if M.shape[1] <= 32:
        out = np.empty((k, M.shape[1]))
        for j in range(M.shape[1]):
            out[:, j] = np.bincount(labels, weights=M[:, j], minlength=k)
        return out
    G = csr_matrix((np.ones(n), (labels, np.arange(n))), shape=(k, n))
    return np.asarray(G @ M)


def sse(X: np.ndarray, labels: np.ndarray, weights: np.ndarray | None = None) -> float:
    """The k-means objective of a clustering: sum_i w_i ||x_i - mu_c||^2.

    Computed from the data, mu_c being the (weighted) mean of x_i's cluster.

    Parameters
    ----------
    X : array_like of shape (n, d)
        The points.
    labels : array_like of shape (n,)
        Any hashable cluster labels.
    weights : array_like of shape (n,), optional
        Point weights (None: every w_i = 1).

    Returns
    -------
    float
        The (weighted) sum of squared distances to the cluster means.

    Raises
    ------
    InputError
        X is not an (n, d) array of finite numbers, ``labels`` do not have n entries, or
        ``weights`` are not n positive finite numbers.

    Examples
    --------
    >>> from pcsos import sse
    >>> sse([[0.0], [2.0], [10.0]], [0, 0, 1])
    2.0
    >>> sse([[0.0], [2.0], [10.0]], [0, 0, 1], weights=[3.0, 1.0, 1.0])
    3.0
    """
    X = _as_points(X)
    labels = _one_label_each(labels, len(X))
    weights = _as_weights(weights, len(X))  # positive and finite: no cluster of weight 0
    return _sse(X, labels, weights)


def _one_label_each(labels, n: int) -> np.ndarray:
    labels = np.asarray(labels)
    if labels.shape != (n,):
        raise InputError(f"expected {n} labels (one per row of X), got shape {labels.shape}",
                         source="labels")
    return labels


def _sse(X: np.ndarray, labels: np.ndarray, weights: np.ndarray | None) -> float:
    """:func:`sse` of checked arrays (an instance's: its data and weights were checked when
    it was made, and the objective is recomputed on every incumbent)."""
    total = 0.0
    for h in np.unique(labels):
        inside = labels == h
        P = X[inside]
        if weights is None:
            total += float(((P - P.mean(axis=0)) ** 2).sum())
        else:
            w = weights[inside]
            mu = (w @ P) / w.sum()
            total += float(w @ ((P - mu) ** 2).sum(axis=1))
    return total


def canonical_labels(labels: np.ndarray) -> np.ndarray:
    """Labels renumbered 0, 1, ... in order of first appearance, so that two labellings of
    the same clustering compare equal."""
    _, first, inv = np.unique(np.asarray(labels), return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first)] = np.arange(len(first))
    return rank[inv.ravel()]


def cl_adjacency(s: int, cl: np.ndarray) -> list[np.ndarray]:
    """For each of ``s`` points, the points it has a pair with (``cl``: (p, 2) index pairs,
    e.g. the cannot-link ones), in the pairs' order."""
    adj: list[list[int]] = [[] for _ in range(s)]
    for a, b in np.asarray(cl, dtype=np.int64).reshape(-1, 2).tolist():
        adj[a].append(b)
        adj[b].append(a)
    return [np.asarray(x, dtype=np.int64) for x in adj]


def pairs_satisfied(labels: np.ndarray, ml: np.ndarray, cl: np.ndarray) -> bool:
    """True when every ML pair shares a label and every CL pair does not."""
    labels = np.asarray(labels)
    ml = np.asarray(ml, dtype=np.int64).reshape(-1, 2)
    cl = np.asarray(cl, dtype=np.int64).reshape(-1, 2)
    return bool(np.all(labels[ml[:, 0]] == labels[ml[:, 1]])
                and np.all(labels[cl[:, 0]] != labels[cl[:, 1]]))


def check_start(instance: Instance, labels, source: str = "init_labels") -> np.ndarray:
    """A user's clustering of ``instance`` as a warm start: canonical labels 0..k-1.

    ``labels`` holds one integer label per point, any k distinct values (e.g. 1..k). Raises
    :class:`InputError` (``source`` names the argument or file) when the length is not n,
    a label is not an integer, the clustering does not use exactly k clusters, it breaks
    a pair (the message counts the broken pairs and names the first ones) or the size
    constraints. The labels are
    checked, not repaired: a start that silently became another clustering would hide
    a mistake in the user's file.
    """
    try:
        lab = np.asarray(labels)
    except (TypeError, ValueError) as exc:
        raise InputError(f"labels are not an array: {exc}", source=source) from None
    if lab.ndim != 1 or lab.shape[0] != instance.n:
        raise InputError(f"expected {instance.n} labels (one per point), got shape "
                         f"{lab.shape}", source=source)
    if lab.dtype.kind == "f":
        if not np.all(np.isfinite(lab)) or not np.all(lab == np.round(lab)):
            i = int(np.flatnonzero(~np.isfinite(lab) | (lab != np.round(lab)))[0])
            raise InputError(f"label of point {i} is not an integer: {lab[i]!r}",
                             source=source)
    elif lab.dtype.kind not in "iub":
        raise InputError(f"labels must be integers, got dtype {lab.dtype}", source=source)
    lab = lab.astype(np.int64)
    used = np.unique(lab)
    if len(used) != instance.k:
        raise InputError(f"the labels form {len(used)} clusters, k = {instance.k}",
                         source=source)
    broken = [("must-link", int(i), int(j)) for i, j in instance.ml if lab[i] != lab[j]]
    broken += [("cannot-link", int(i), int(j)) for i, j in instance.cl if lab[i] == lab[j]]
    if broken:
        shown = ", ".join(f"{t} ({i}, {j})" for t, i, j in broken[:5])
        more = f" and {len(broken) - 5} more" if len(broken) > 5 else ""
        raise InputError(f"the clustering breaks {len(broken)} pair(s): {shown}{more}",
                         source=source)
    if not instance.sizes_ok(lab):
        # a start is taken as proof of feasibility: one that breaks the sizes would be an
        # incumbent that is not a solution
        counts = sorted(np.unique(lab, return_counts=True)[1].tolist(), reverse=True)
        want = (f"sizes {list(instance.sizes)}" if instance.sizes is not None
                else "sizes in {}..{}".format(*instance.size_bounds()))
        raise InputError(f"the clusters have sizes {counts}, the constraints ask for {want}",
                         source=source)
    return canonical_labels(lab)


def bipartition(s: int, edges: np.ndarray) -> tuple[np.ndarray | None, list[int] | None]:
    """2-colour the graph on ``s`` vertices by BFS.

    Returns ``(colours, None)`` with colours in {0, 1} (each component's smallest vertex gets
    0), or ``(None, cycle)`` with the vertices of an odd cycle, in cycle order.
    """
    adj = [a.tolist() for a in cl_adjacency(s, edges)]
    colour = np.full(s, -1, dtype=np.int64)
    parent = np.full(s, -1, dtype=np.int64)
    for root in range(s):
        if colour[root] >= 0:
            continue
        colour[root] = 0
        queue = deque([root])
        while queue:
            u = queue.popleft()
            for v in adj[u]:
                if colour[v] < 0:
                    colour[v] = 1 - colour[u]
                    parent[v] = u
                    queue.append(v)
                elif colour[v] == colour[u]:
                    return None, _odd_cycle(parent, u, v)
    return colour, None


def _odd_cycle(parent: np.ndarray, u: int, v: int) -> list[int]:
    """The cycle closed by the non-tree edge (u, v) whose ends have equal BFS colour."""
    pu = [u]
    while parent[pu[-1]] >= 0:
        pu.append(int(parent[pu[-1]]))
    pv = [v]
    while parent[pv[-1]] >= 0:
        pv.append(int(parent[pv[-1]]))
    on_u = {x: t for t, x in enumerate(pu)}
    for t, x in enumerate(pv):
        if x in on_u:
            return pu[: on_u[x] + 1] + pv[:t][::-1]
    raise AssertionError("BFS tree paths must meet")  # pragma: no cover


class Problem:
    """An instance in super-point space: the data every node of the tree works on.

    Must-link components are shrunk into super-points (spec §2), each a point of mass
    e_i at its (weighted) mean; a heuristic or bound plugin receives one.

    Attributes
    ----------
    instance : Instance
        The user's validated instance (shared by all nodes, never modified).
    k : int
        Number of clusters.
    e : ndarray of shape (s,), float64
        Masses of the super-points: their numbers of original points, or with point
        weights the sums of their weights (``counts`` holds the numbers).
    W : ndarray of shape (s, d), float64
        (Weighted) row sums of the *centred* data over each super-point.
    cl : ndarray of shape (q, 2), int64
        Cannot-link pairs between super-points, oriented and deduplicated.
    point_labels : ndarray of shape (n,), int64
        The super-point of every original point.
    c0 : float
        (Weighted) sum of squared norms of the centred data, so that
        SSE = c0 - <W W^T, Z> with Z_ij = 1 / (mass of the cluster) for i, j in one
        cluster.
    parent_map : ndarray of shape (s_parent,), int64, or None
        The child index of each parent super-point.

    Examples
    --------
    >>> import pcsos
    >>> inst = pcsos.make_instance([[0.0], [1], [5], [6]], 2, ml=[(0, 1)], cl=[(1, 2)])
    >>> prob = pcsos.Problem.from_instance(inst)
    >>> prob.s, prob.e.tolist(), prob.point_labels.tolist()
    (3, [2.0, 1.0, 1.0], [0, 0, 1, 2])
    """

    def __init__(self, instance: Instance, e: np.ndarray, W: np.ndarray, cl: np.ndarray,
                 point_labels: np.ndarray, c0: float, *, infer_k2: bool = True,
                 parent_map: np.ndarray | None = None):
        self.instance = instance
        self.k = instance.k
        self.e = e
        self.W = W
        self.cl = cl
        self.point_labels = point_labels
        self.c0 = c0
        self.infer_k2 = infer_k2
        self.parent_map = parent_map
        for a in (e, W, cl, point_labels):
            a.setflags(write=False)

    # ----------------------------------------------------------------- construction
    @classmethod
    def from_instance(cls, instance: Instance, *, infer_k2: bool = True) -> Problem:
        """Shrink must-link components into super-points (spec §2).

        Raises :class:`~pcsos.errors.InfeasibleError` when a cannot-link pair lies inside a
        must-link component (naming the chain) or, for k = 2 with ``infer_k2``, when the
        cannot-link graph has an odd cycle, and :class:`~pcsos.errors.InputError` when
        ``instance`` is not an Instance.
        """
        if not isinstance(instance, Instance):
            raise InputError(f"expected an Instance (from pcsos.make_instance), got "
                             f"{type(instance).__name__}", source="instance")
        n = instance.n
        ml = instance.ml
        g = coo_matrix((np.ones(len(ml)), (ml[:, 0], ml[:, 1])), shape=(n, n))
        _, labels = connected_components(g, directed=False)
        labels = labels.astype(np.int64)
        cl = instance.cl
        inside = labels[cl[:, 0]] == labels[cl[:, 1]]
        if inside.any():
            i, j = map(int, cl[np.argmax(inside)])
            chain = _ml_chain(ml, i, j)
            links = " - ".join(map(str, chain))
            raise InfeasibleError(
                f"cannot-link ({i}, {j}) joins two points of one must-link group: "
                f"must-link chain {links}",
                reason="ml_cl_conflict",
                pairs=[(i, j)] + list(zip(chain[:-1], chain[1:])))
        s = int(labels.max()) + 1 if n else 0
        w = instance.weights
        Xc = instance.X - _centre(instance)
        if w is None:
            c0 = float(np.einsum("ij,ij->", Xc, Xc))
            e = np.bincount(labels, minlength=s).astype(np.float64)
            W = group_sums(labels, Xc, s)
        else:
            # a super-point is a point of mass e_i at its weighted mean, so
            # SSE = c0 - <W W^T, Z> holds with Z_ij = 1 / (weight of the cluster)
            c0 = float(w @ np.einsum("ij,ij->i", Xc, Xc))
            e = np.bincount(labels, weights=w, minlength=s)
            W = group_sums(labels, w[:, None] * Xc, s)
        scl = _orient_unique(labels[cl])
        prob = cls(instance, e, W, scl, labels, c0, infer_k2=infer_k2)._k2_closure()
        prob.parent_map = None  # the root has no parent, whatever k = 2 inference merged
        return prob

    # ----------------------------------------------------------------- properties
    @property
    def s(self) -> int:
        """Number of super-points."""
        return len(self.e)

    @property
    def n(self) -> int:
        return self.instance.n

    @property
    def d(self) -> int:
        return self.instance.d

    def __getstate__(self):
        # what cached_property fills in is recomputed where needed: a pickle (a checkpoint,
        # a node sent to another process) stays small, and a copy taken while a job fills
        # the cache cannot see the dict change size (dict.copy is atomic under the GIL)
        return {key: v for key, v in self.__dict__.copy().items() if key not in _CACHED}

    @cached_property
    def C(self) -> np.ndarray:
        """The s x s matrix W W^T (so SSE = c0 - <C, Z>)."""
        return self.W @ self.W.T

    @cached_property
    def counts(self) -> np.ndarray:
        """The number of original points in each super-point (int64; what sizes count,
        while ``e`` holds their weights)."""
        return np.bincount(self.point_labels, minlength=self.s).astype(np.int64)

    @cached_property
    def centre(self) -> np.ndarray:
        """The (weighted) mean of the data, the origin of the centred coordinates of W."""
        return _centre(self.instance)

    @cached_property
    def Xc(self) -> np.ndarray:
        """The original points in the centred coordinates of W and the centroids (n x d)."""
        return self.instance.X - self.centre

    @property
    def point_weights(self) -> np.ndarray:
        """The weight of every original point (ones without weights)."""
        w = self.instance.weights
        return np.ones(self.n) if w is None else w

    @cached_property
    def centroids(self) -> np.ndarray:
        """Means of the super-points in the centred coordinates, w_i / e_i."""
        return self.W / self.e[:, None]

    # ----------------------------------------------------------------- children
    def contract(self, groups: np.ndarray) -> Problem:
        """Merge super-points that share a label in ``groups`` (labels 0..s'-1, all used).

        Raises :class:`InfeasibleError` when a cannot-link pair ends up inside one group.
        """
        groups = np.asarray(groups, dtype=np.int64)
        s2 = int(groups.max()) + 1
        scl = groups[self.cl] if len(self.cl) else self.cl
        inside = scl[:, 0] == scl[:, 1] if len(scl) else np.zeros(0, bool)
        if inside.any():
            a, b = map(int, self.cl[np.argmax(inside)])
            i, j = self.original_pair(a, b)
            raise InfeasibleError(f"cannot-link ({i}, {j}) would be inside one cluster",
                                  reason="ml_cl_conflict", pairs=[(i, j)])
        e = np.bincount(groups, weights=self.e, minlength=s2)
        W = group_sums(groups, self.W, s2)
        child = Problem(self.instance, e, W, _orient_unique(scl), groups[self.point_labels],
                        self.c0, infer_k2=self.infer_k2, parent_map=groups)
        return child._k2_closure()

    def merge(self, i: int, j: int) -> Problem:
        """Must-link child: super-points i and j share a cluster. The parent is unchanged."""
        i, j = self._check_index(i), self._check_index(j)
        if i == j:
            raise InputError(f"cannot merge super-point {i} with itself")
        lo, hi = min(i, j), max(i, j)
        groups = np.arange(self.s, dtype=np.int64)
        groups[hi] = lo
        groups[hi + 1:] -= 1
        return self.contract(groups)

    def add_cl(self, i: int, j: int) -> Problem:
        """Cannot-link child: super-points i and j are in different clusters."""
        i, j = self._check_index(i), self._check_index(j)
        if i == j:
            raise InfeasibleError(f"cannot-link between super-point {i} and itself",
                                  reason="ml_cl_conflict")
        cl = _orient_unique(np.vstack([self.cl, [[i, j]]]))
        child = Problem(self.instance, self.e, self.W, cl, self.point_labels, self.c0,
                        infer_k2=self.infer_k2, parent_map=np.arange(self.s, dtype=np.int64))
        # share the parent's cached C: it does not depend on the CL pairs
        if "C" in self.__dict__:
            child.__dict__["C"] = self.C
        return child._k2_closure()

    def _k2_closure(self) -> Problem:
        """For k = 2, merge every colour class of each CL component (spec §2.5)."""
        if not (self.infer_k2 and self.k == 2 and len(self.cl)):
            return self
        colour, cycle = bipartition(self.s, self.cl)
        if cycle is not None:
            pairs = [self.original_pair(a, b) for a, b in zip(cycle, cycle[1:] + cycle[:1])]
            raise InfeasibleError(
                "k = 2 but the cannot-link pairs form an odd cycle: "
                + ", ".join(f"({i}, {j})" for i, j in pairs),
                reason="odd_cycle", pairs=pairs)
        _, comp = connected_components(
            coo_matrix((np.ones(len(self.cl)), (self.cl[:, 0], self.cl[:, 1])),
                       shape=(self.s, self.s)), directed=False)
        key = comp * 2 + colour
        _, groups = np.unique(key, return_inverse=True)
        if groups.max() + 1 == self.s:
            return self
        # order groups by their smallest member so that indices stay stable
        first = np.full(groups.max() + 1, self.s)
        np.minimum.at(first, groups, np.arange(self.s))
        rank = np.empty_like(first)
        rank[np.argsort(first)] = np.arange(len(first))
        groups = rank[groups]
        child = self.contract(groups)
        if self.parent_map is not None:
            child.parent_map = groups[self.parent_map]
        return child

    # ----------------------------------------------------------------- labels
    def to_points(self, super_labels: np.ndarray) -> np.ndarray:
        """Original-point labels from super-point labels."""
        return np.asarray(super_labels, dtype=np.int64)[self.point_labels]

    def super_objective(self, super_labels: np.ndarray) -> float:
        """SSE of a super-point labelling computed as c0 - sum_h ||W_h||^2 / e_h (fast path)."""
        super_labels = np.asarray(super_labels, dtype=np.int64)
        kk = int(super_labels.max()) + 1
        Wh = group_sums(super_labels, self.W, kk)
        eh = np.bincount(super_labels, weights=self.e, minlength=kk)
        used = eh > 0
        return float(self.c0 - np.sum(np.einsum("ij,ij->i", Wh[used], Wh[used]) / eh[used]))

    def satisfies(self, super_labels: np.ndarray) -> bool:
        """True when the super-point labelling respects this problem's CL pairs."""
        sl = np.asarray(super_labels)
        return bool(len(self.cl) == 0 or np.all(sl[self.cl[:, 0]] != sl[self.cl[:, 1]]))

    def original_pair(self, a: int, b: int) -> tuple[int, int]:
        """One original CL pair that maps onto super-points (a, b), else their first members."""
        pl = self.point_labels
        cl = self.instance.cl
        if len(cl):
            la, lb = pl[cl[:, 0]], pl[cl[:, 1]]
            hit = ((la == a) & (lb == b)) | ((la == b) & (lb == a))
            if hit.any():
                i, j = cl[np.argmax(hit)]
                return int(i), int(j)
        return int(np.argmax(pl == a)), int(np.argmax(pl == b))

    def _check_index(self, i: int) -> int:
        i = int(i)
        if not 0 <= i < self.s:
            raise InputError(f"super-point index {i} out of range 0..{self.s - 1}")
        return i

    def __repr__(self) -> str:
        return (f"Problem(n={self.n}, d={self.d}, k={self.k}, s={self.s}, "
                f"cl={len(self.cl)})")


_CACHED = ("C", "centroids", "counts", "centre", "Xc")  # the cached_property names of Problem


def _centre(instance: Instance) -> np.ndarray:
    # the weighted mean, so that the rows of W sum to 0 with weights as without: the
    # spectral floor relies on it, and a single cluster's value is then c0
    w = instance.weights
    return instance.X.mean(axis=0) if w is None else (w @ instance.X) / w.sum()


def _orient_unique(pairs: np.ndarray) -> np.ndarray:
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if len(pairs) == 0:
        return np.empty((0, 2), dtype=np.int64)
    return np.unique(np.sort(pairs, axis=1), axis=0)


def _ml_chain(ml: np.ndarray, i: int, j: int) -> list[int]:
    """The shortest must-link path from i to j (they are known to be connected)."""
    adj: dict[int, list[int]] = {}
    for a, b in ml:
        adj.setdefault(int(a), []).append(int(b))
        adj.setdefault(int(b), []).append(int(a))
    prev = {i: -1}
    queue = deque([i])
    while queue:
        u = queue.popleft()
        if u == j:
            break
        for v in adj.get(u, ()):
            if v not in prev:
                prev[v] = u
                queue.append(v)
    path = [j]
    while prev[path[-1]] != -1:
        path.append(prev[path[-1]])
    return path[::-1]
