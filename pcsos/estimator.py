"""The scikit-learn estimator: :class:`PCSOSClustering`, exact constrained k-means.

Every solver option (:class:`pcsos.options.SolverOptions`) is a constructor parameter,
``random_state`` (None, an int, a ``numpy.random.Generator`` or ``RandomState``) replaces
``seed``, the size constraints are constructor parameters (properties of the clusters
sought), and the pairs, point weights (``sample_weight``) and a warm start are ``fit``
keywords. With scikit-learn installed
(``pip install 'pcsos[sklearn]'``) the class is a ``BaseEstimator`` and ``ClusterMixin``,
validates its input as scikit-learn does and passes its estimator checks; without it, it
keeps the same parameters and methods, with pcsos's own validation.
"""

from __future__ import annotations

import inspect

import numpy as np

from pcsos.api import solve
from pcsos.errors import InfeasibleError, InputError, UndecidedError, is_integer
from pcsos.options import SolverOptions

#: what fit sets (scikit-learn's validation sets the two feature attributes)
_FITTED = ("n_features_in_", "feature_names_in_", "result_", "labels_", "cluster_centers_",
           "inertia_", "lower_bound_", "gap_", "n_nodes_", "status_")

__all__ = ["PCSOSClustering"]

try:  # an optional dependency: the estimator works without it
    from sklearn.base import BaseEstimator, ClusterMixin
    from sklearn.utils.validation import check_is_fitted, validate_data
except ImportError:  # pragma: no cover - exercised where scikit-learn is absent
    BaseEstimator = ClusterMixin = None


class _Params:
    """get_params / set_params / repr from the constructor's signature (scikit-learn's
    protocol, for when scikit-learn is not installed)."""

    @classmethod
    def _get_param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values() if p.name != "self"]

    def get_params(self, deep: bool = True) -> dict:
        """The constructor parameters."""
        return {name: getattr(self, name) for name in self._get_param_names()}

    def set_params(self, **params):
        """Set constructor parameters; unknown names raise ValueError."""
        valid = self._get_param_names()
        for key, value in params.items():
            if key not in valid:
                raise ValueError(f"invalid parameter {key!r} for {type(self).__name__}")
            setattr(self, key, value)
        return self

    def __repr__(self) -> str:
        defaults = {p.name: p.default for p in
                    inspect.signature(type(self).__init__).parameters.values()}
        changed = {k: v for k, v in self.get_params().items() if v is not defaults.get(k)
                   and v != defaults.get(k)}
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in changed.items())})"


_BASES = (ClusterMixin, BaseEstimator) if BaseEstimator is not None else (_Params,)


def _seed(random_state) -> int | None:
    """An int seed from scikit-learn's random_state (None stays None: the solver's 0)."""
    if random_state is None:
        return None
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2**31 - 1))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(2**31 - 1))
    if not is_integer(random_state) or random_state < 0:
        raise InputError("random_state must be None, a non-negative int, a numpy Generator "
                         f"or a RandomState, got {random_state!r}", source="random_state")
    return int(random_state)


class PCSOSClustering(*_BASES):
    """Exact k-means (minimum sum of squares) with must-link / cannot-link pairs, certified.

    A scikit-learn estimator (a ``BaseEstimator`` and ``ClusterMixin`` when scikit-learn is
    installed) over :func:`pcsos.solve`; the pairs are given to :meth:`fit`.

    Parameters
    ----------
    n_clusters : int, default 8
        Number of clusters k.
    size_min, size_max : int, optional
        Bounds on every cluster's number of points.
    sizes : sequence of int, optional
        The exact cluster sizes, in any order (not with ``size_min`` / ``size_max``).
    tol, abs_tol, max_nodes, time_limit, workers, threads, root_threads, heuristic, \
heuristic_options, heuristic_time_limit, root_heuristic, bound_settings, cp_settings, \
feasibility_backend, order, branching
        The fields of :class:`~pcsos.options.SolverOptions`, same names, same defaults
        (``heuristic_options`` None for empty).
    random_state : int, numpy Generator or RandomState, optional
        Seed of every random choice (None: 0, not fresh entropy as in scikit-learn, so
        that fits repeat; with ``workers=1``, since nodes that finish side by side do so in
        an order that varies).
    verbose : bool, default False
        Print the progress table on stderr.

    Attributes
    ----------
    labels_ : ndarray of shape (n,)
        The best clustering found: certified optimal when ``status_`` is 'optimal', else
        within ``gap_`` of the optimum.
    cluster_centers_ : ndarray of shape (k, d)
        The cluster means (weighted means with ``sample_weight``).
    inertia_ : float
        Its (weighted) SSE.
    lower_bound_, gap_ : float
        The certified lower bound and relative gap.
    n_nodes_ : int
        Nodes of the search tree.
    status_ : str
        As the ``status`` of a :class:`~pcsos.Result`; a stop at a limit still sets every attribute.
    result_ : Result
        The full result of the solve.
    n_features_in_ : int
        Number of features seen by :meth:`fit`.

    Examples
    --------
    >>> import numpy as np
    >>> from pcsos import PCSOSClustering
    >>> X = np.array([[0.0, 0], [0, 2], [10, 0], [10, 2]])
    >>> model = PCSOSClustering(n_clusters=2, random_state=0).fit(X, cl=[(0, 1)])
    >>> model.labels_.tolist(), model.status_
    ([0, 1, 0, 0], 'optimal')
    >>> model.predict([[9.0, 1.0]]).tolist()
    [0]
    """

    def __init__(self, n_clusters: int = 8, *, size_min: int | None = None,
                 size_max: int | None = None, sizes=None, tol: float = 1e-4,
                 abs_tol: float | None = None,
                 max_nodes: int | None = None, time_limit: float | None = None,
                 workers: int | None = None, threads: int | None = None,
                 root_threads: int | None = None, heuristic: str = "ipc-kmeans",
                 heuristic_options: dict | None = None,
                 heuristic_time_limit: float | None = None,
                 root_heuristic: str | None = "s-mdeclust", bound_settings=None,
                 cp_settings=None,
                 feasibility_backend: str = "highs", order: str = "best",
                 branching: str = "pseudocost",
                 random_state=None, verbose: bool = False):
        self.n_clusters = n_clusters
        self.size_min = size_min
        self.size_max = size_max
        self.sizes = sizes
        self.tol = tol
        self.abs_tol = abs_tol
        self.max_nodes = max_nodes
        self.time_limit = time_limit
        self.workers = workers
        self.threads = threads
        self.root_threads = root_threads
        self.heuristic = heuristic
        self.heuristic_options = heuristic_options
        self.heuristic_time_limit = heuristic_time_limit
        self.root_heuristic = root_heuristic
        self.bound_settings = bound_settings
        self.cp_settings = cp_settings
        self.feasibility_backend = feasibility_backend
        self.order = order
        self.branching = branching
        self.random_state = random_state
        self.verbose = verbose

    def solver_options(self) -> SolverOptions:
        """The :class:`~pcsos.options.SolverOptions` these parameters stand for (a Generator
        or RandomState ``random_state`` draws its seed here, anew at each call, as each fit
        does)."""
        kw = {name: getattr(self, name) for name in SolverOptions.names() if name != "seed"}
        kw["heuristic_options"] = dict(self.heuristic_options or {})
        return SolverOptions(seed=_seed(self.random_state), **kw)

    def _validate(self, X, reset: bool) -> np.ndarray:
        if BaseEstimator is not None:
            return validate_data(self, X, reset=reset, dtype=np.float64)
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise InputError(f"X must be a 2-D array (n samples x d features), got shape "
                             f"{X.shape}; reshape your data", source="X")
        if reset:
            self.n_features_in_ = X.shape[1]
        elif X.shape[1] != self.n_features_in_:
            raise InputError(f"X has {X.shape[1]} features, but PCSOSClustering is "
                             f"expecting {self.n_features_in_} features as input", source="X")
        return X

    def fit(self, X, y=None, *, ml=None, cl=None, sample_weight=None,
            init_labels=None) -> PCSOSClustering:
        """Solve on X with the must-link / cannot-link pairs.

        Parameters
        ----------
        X : array_like of shape (n, d)
            The points.
        y : None
            Ignored (scikit-learn convention); the pairs are keyword-only so that they are
            never mistaken for it.
        ml, cl : iterable of (i, j) pairs, optional
            Must-link and cannot-link pairs of 0-based row indices.
        sample_weight : array_like of shape (n,), optional
            Positive point weights (None: all 1).
        init_labels : array_like of shape (n,), optional
            A feasible clustering to start from (see :func:`pcsos.api.solve_instance`).

        Returns
        -------
        PCSOSClustering
            self, fitted. A stop at a limit still sets every attribute (``status_`` and
            ``gap_`` say how good it is).

        Raises
        ------
        InputError
            Bad input (scikit-learn's ValueError / TypeError for malformed X).
        InfeasibleError
            The pairs admit no clustering into ``n_clusters`` non-empty clusters.
        UndecidedError
            No clustering was found before a limit stopped the solver.
        """
        # a fit that fails leaves the estimator unfitted, not half the old fit and half
        # the new data's shape (predict would then break on a shape mismatch)
        try:
            return self._fit(X, ml, cl, sample_weight, init_labels)
        except BaseException:
            for name in _FITTED:
                self.__dict__.pop(name, None)
            raise

    def _fit(self, X, ml, cl, sample_weight, init_labels) -> PCSOSClustering:
        Xa = self._validate(X, reset=True)
        if isinstance(self.n_clusters, (int, np.integer)) and Xa.shape[0] < self.n_clusters:
            raise InputError(f"n_samples = {Xa.shape[0]} is less than n_clusters = "
                             f"{self.n_clusters}", source="X")
        res = solve(Xa, self.n_clusters, ml if ml is not None else (),
                    cl if cl is not None else (), self.solver_options(),
                    sample_weight=sample_weight,
                    size_min=self.size_min, size_max=self.size_max, sizes=self.sizes,
                    init_labels=init_labels, verbose=self.verbose)
        if res.status == "infeasible":
            raise InfeasibleError(res.message, pairs=res.infeasible_pairs)
        if res.labels is None:  # feasible or not, undecided at the stop
            raise UndecidedError(f"no clustering found before the solver stopped "
                                 f"({res.status}: {res.message})")
        self.result_ = res
        # solve validated the weights: n positive finite numbers
        w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        self.labels_ = res.labels
        self.cluster_centers_ = np.vstack([
            np.average(Xa[res.labels == h], axis=0,
                       weights=None if w is None else w[res.labels == h])
            for h in range(int(self.n_clusters))])  # solve took it as a whole number
        self.inertia_ = res.objective
        self.lower_bound_ = res.lower_bound
        self.gap_ = res.gap
        self.n_nodes_ = res.nodes
        self.status_ = res.status
        return self

    def fit_predict(self, X, y=None, *, ml=None, cl=None, sample_weight=None,
                    init_labels=None) -> np.ndarray:
        """:meth:`fit` then return ``labels_``."""
        return self.fit(X, ml=ml, cl=cl, sample_weight=sample_weight,
                        init_labels=init_labels).labels_

    def predict(self, X) -> np.ndarray:
        """The nearest cluster centre of each row (constraints do not apply to new points)."""
        if BaseEstimator is not None:
            check_is_fitted(self)
        elif not hasattr(self, "cluster_centers_"):
            raise InputError("this PCSOSClustering instance is not fitted yet; call fit first")
        Xa = self._validate(X, reset=False)
        d2 = ((Xa[:, None, :] - self.cluster_centers_[None, :, :]) ** 2).sum(axis=2)
        return np.argmin(d2, axis=1)
