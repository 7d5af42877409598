"""How a node's lower bound is computed: one typed settings object for the bound layer.

:class:`BoundSettings` travels unchanged from :class:`pcsos.options.SolverOptions` (or the
CLI) through the tree, the node and the cutting-plane loop to ``solve_sdp`` and the ADMM. Its
defaults are written here only. What belongs to one call rather than to the run (a time
limit, a warm start, a cancel hook, the target that prunes the node, BLAS threads) stays a
keyword of the function that takes it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from pcsos.bounds.arrays import DEVICES, cuda_available, get_backend
from pcsos.bounds.colgen.engine import (
    BOX_SHARE,
    CHILD_EXACT_EVERY,
    EXACT_EVERY,
    MASTER_METHOD,
    SR_ROUNDS,
)
from pcsos.bounds.colgen.master import METHODS as MASTER_METHODS
from pcsos.bounds.eig import eig_methods
from pcsos.bounds.model import SDP_TOL
from pcsos.bounds.safe import POLISH_EVALS
from pcsos.errors import InputError, is_integer, is_real

__all__ = ["BoundSettings", "BACKENDS", "ENGINES"]

#: the SDP solvers, chosen by name (pcsos.bounds.solve)
BACKENDS = ("admm", "mosek", "scs", "clarabel")
#: the bound engines a node can run ('auto' picks one of the other two: engine_for)
ENGINES = ("auto", "sdp", "colgen")
#: 'auto' takes the set-partitioning LP for at least this many clusters in at most this many
#: dimensions, where its exact pricing (a search over the centre) is quick and the Peng-Wei
#: SDP weak, and for exact sizes of several values in those dimensions (blobs, n = 75,
#: sizes 30, 25, 20: the SDP's root gap 39 %, the LP's optimal at the root in 11 s); else
#: the SDP (docs/solver.md, "Many clusters", has the measurements)
AUTO_COLGEN_MIN_K = 4
AUTO_COLGEN_MAX_D = 2
#: ... and in 3 dimensions for at least this many clusters: 1 000 points around k centres
#: in [0, 10]^3, 300 s on one core each (docs/benchmarks.md, "Many clusters"): at k = 20
#: the LP solved the root in 37 s without pairs where the SDP stood at 0.70 %, and led with
#: 500 and 1 000 pairs; at k = 10 it solved the root without pairs (109 s; the SDP 0.094 %)
#: but trailed with 500 (0.18 % against 0.059 %); at k = 4 and 6 the SDP led
AUTO_COLGEN_MIN_K_3D = 20
#: ... and with at most this many cannot-link pairs per point, as far as it was measured:
#: 300 points around 10 centres in the plane, pairs between points of different centres,
#: root LP against the SDP without cuts (docs/benchmarks.md, "Many clusters"): with 150
#: and 300 pairs the LP 0.011 % (solved) in 37 s and 0.0077 % in 40 s from the incumbent,
#: the SDP 7.9 % and 7.4 % (with a matching bound of the pairs the LP stood at 9 % there);
#: the overlapping n = 1 000, k = 20 set with 951 pairs: the LP 0.413 % in 30 minutes
AUTO_COLGEN_MAX_CL = 1.0
#: ... and, whatever k, for clusters whose sizes are bounded (a size_min or size_max that
#: binds; exact sizes are the rule above) in at most this many dimensions, without
#: cannot-link pairs, as far as it was measured (docs/benchmarks.md, "Cluster sizes"; sizes
#: in [floor(n/2k), ceil(1.5n/k)], one core each): the SDP bounds a cluster's size only
#: through Z's row sums, and the LP won on iris (d = 4), seeds (d = 7), vertebral (d = 6)
#: and glass (d = 9) at 9 of the 10 values of k tried, and lost on vertebral at k = 4. It
#: won on wine (d = 13) too, but lost on heart (d = 12) at k = 2 and 6, its root unsolved
#: at 120 s, so the line is drawn below both
SIZED_COLGEN_MAX_D = 9
#: the rule of engine_for, in words (the CLI's help says it so)
AUTO_RULE = (f"colgen with at most {AUTO_COLGEN_MAX_CL:g} cannot-link pair per point: in at "
             f"most {AUTO_COLGEN_MAX_D} dimensions for k >= {AUTO_COLGEN_MIN_K} or for exact "
             "sizes of two values or more without cannot-link pairs, in 3 dimensions for "
             f"k >= {AUTO_COLGEN_MIN_K_3D}, and for cluster sizes bounded by a size_min or "
             f"size_max that binds, without cannot-link pairs, in at most "
             f"{SIZED_COLGEN_MAX_D} dimensions; else sdp")


@dataclass(frozen=True)
class BoundSettings:
    """Settings of the bound layer, with their defaults.

    Given to :class:`~pcsos.options.SolverOptions` (``bound_settings``),
    :func:`pcsos.certify` and ``--bound-option NAME=VALUE`` on the command line; a dict
    of these fields is accepted wherever one is.

    Parameters
    ----------
    engine : {'auto', 'sdp', 'colgen'}
        The bound a node computes: 'sdp' (the Peng-Wei SDP with cuts), 'colgen' (the
        set-partitioning LP by column generation, :mod:`pcsos.bounds.colgen`; for many
        clusters in few dimensions) or 'auto' (:meth:`engine_for`).
    backend : {'admm', 'mosek', 'scs', 'clarabel'}
        The SDP solver: 'admm' (built in), 'mosek' (licensed), 'scs' or 'clarabel' (via
        cvxpy, references).
    tol : float
        Relative KKT tolerance of a tight solve (the bound is valid at any tolerance).
    max_iter : int, optional
        Iteration cap per solve (None: the backend's).
    eig : str, default 'auto'
        The ADMM's eigensolver (:func:`pcsos.bounds.eig.eig_methods`).
    polish : int
        Eigen-solves of dual ascent before each safe bound (0: none).
    device : {'cpu', 'cuda', 'auto'} or module
        Where the ADMM iterates (admm only; an array namespace module such as
        ``array_api_strict`` is accepted too).
    anderson : int, optional
        Memory of the ADMM's Anderson acceleration (None: its default; 0: off).
    sigma_ratio : float, optional
        The ADMM rebalances sigma when the residuals' ratio leaves [1/r, r] (None: its
        default).
    aggregate : bool, default False
        The LP engine aggregates its rows from the incumbent's clusters
        (:mod:`pcsos.bounds.colgen.aggregation`) and turns ``box`` off; off by default:
        without the box it solved fl417's k = 4 root LP 8x faster but pr299's 2-5x slower,
        and the box alone is faster on both (docs/solver.md, "Many clusters").
    box : float, default 0.03
        The LP engine keeps its master's duals within this share of their mean magnitude
        around the best bound's duals (dual box stabilization; 0: off, the duals are then
        smoothed): the overlapping n = 2 000, k = 20 root reached 359.9 in 300 s at 0.03,
        against 340.3 at 1 and 351.9 at 0.01; without a box the TSPLIB k = 4 roots of fl417
        and ali535 did not finish in 180 s (docs/solver.md, "Many clusters").
    exact_every : int, default 1
        The LP engine proves its bound by the exact pricing after every this many masters
        (and after any whose heuristic pricing finds no column): after every master, the
        overlapping n = 2 000, k = 20 root reached in 300 s what every 5th reached in 600 s
        (docs/benchmarks.md, "Large k, overlapping classes"); with sizes, every 5th helped
        glass but stalled vertebral ("Cluster sizes").
    child_exact_every : int, default 3
        ... and below the root, where the exact pricing searches over the cluster's mean
        (with size bounds, or in more than 3 dimensions), after every this many: a child
        starts from its parent's duals. Glass with sizes 17..54 on two workers stood at
        0.145 % and 0.196 % after 600 s in two runs, against 0.371 % at 1 ("Cluster
        sizes").
    master_method : {'ipm', 'simplex'}, default 'ipm'
        How HiGHS solves the LP engine's master: the interior-point method without
        crossover, afresh each time (central duals), or the primal simplex, warm-started:
        the 12 TSPLIB solves of k = 4-10 took 210 s against 547 s (docs/benchmarks.md,
        "Large k, overlapping classes").
    sr_rounds : int, default 0
        Rounds of subset-row cuts on triples of super-points that the LP engine separates
        once a node's LP is solved (:mod:`pcsos.bounds.colgen.subset_rows`; 0: none). They
        apply where its exact pricing searches over the cluster's mean (with size bounds, or
        in more than 3 dimensions), to the points without cannot-link partners.
    verbose : bool, default False
        Print the solver's log.

    Examples
    --------
    >>> from pcsos.bounds.settings import BoundSettings
    >>> bs = BoundSettings.make({"tol": 1e-6}, eig="full")
    >>> bs.tol, bs.eig, bs.engine_for(k=20, d=2), bs.engine_for(k=3, d=2)
    (1e-06, 'full', 'colgen', 'sdp')
    """

    engine: str = "auto"
    backend: str = "admm"
    tol: float = SDP_TOL
    max_iter: int | None = None
    eig: str = "auto"
    polish: int = POLISH_EVALS
    device: Any = "cpu"
    anderson: int | None = None
    sigma_ratio: float | None = None
    aggregate: bool = False
    box: float = BOX_SHARE
    exact_every: int = EXACT_EVERY
    child_exact_every: int = CHILD_EXACT_EVERY
    master_method: str = MASTER_METHOD
    sr_rounds: int = SR_ROUNDS
    verbose: bool = False

    def engine_for(self, k: int, d: int, sizes=None, cl_share: float = 0.0,
                   bounded: bool = False) -> str:
        """The engine that bounds a problem of ``k`` clusters in ``d`` dimensions (``sizes``:
        its exact cluster sizes, or None; ``cl_share``: its cannot-link pairs per point;
        ``bounded``: its cluster sizes have bounds that bind): the one named, or for 'auto'
        'colgen' when cl_share <= AUTO_COLGEN_MAX_CL and either d <= AUTO_COLGEN_MAX_D with
        k >= AUTO_COLGEN_MIN_K or with exact sizes of two values or more and no cannot-link
        pair (the SDP cannot tell which cluster has which size; the LP has a row per size
        value; when its sized pricing relaxed the pairs, 7 points with one pair took 41-47
        nodes where the SDP closed the root), or d = 3 with k >= AUTO_COLGEN_MIN_K_3D, or
        ``bounded`` in d <= SIZED_COLGEN_MAX_D without cannot-link pairs; else 'sdp'."""
        if self.engine != "auto":
            return self.engine
        if cl_share > AUTO_COLGEN_MAX_CL:
            return "sdp"
        if bounded and sizes is None and cl_share == 0 and d <= SIZED_COLGEN_MAX_D:
            return "colgen"
        if d <= AUTO_COLGEN_MAX_D:
            mixed = sizes is not None and len(set(sizes)) > 1 and cl_share == 0
            return "colgen" if k >= AUTO_COLGEN_MIN_K or mixed else "sdp"
        return "colgen" if d == 3 and k >= AUTO_COLGEN_MIN_K_3D else "sdp"

    def colgen_options(self) -> dict[str, Any]:
        """The keywords of the LP engine's ``colgen_bound`` (``pcsos.bounds.colgen``) that
        these settings give (every caller of the LP engine passes them so)."""
        return {"aggregate": self.aggregate, "box": self.box, "exact_every": self.exact_every,
                "master_method": self.master_method, "sr_rounds": self.sr_rounds}

    def on_cpu(self) -> bool:
        """Whether the SDP solver runs on the CPU: device 'cpu', or 'auto' without a GPU (a
        namespace module given as the device does not count)."""
        return self.device == "cpu" or (self.device == "auto" and not cuda_available())

    def engine_of(self, instance) -> str:
        """:meth:`engine_for` an :class:`~pcsos.problem.Instance` (its k, d, exact sizes,
        cannot-link pairs per point, and whether its size bounds bind: a cluster of k may
        have fewer than size_min points or more than size_max)."""
        lo, hi = instance.size_bounds()
        bounded = lo > 1 or hi < instance.n - instance.k + 1
        return self.engine_for(instance.k, instance.d, instance.sizes,
                               len(instance.cl) / max(instance.n, 1), bounded)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The setting names, in order."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def make(cls, settings: BoundSettings | dict | None = None, *, source: str = "bound",
             **changes: Any) -> BoundSettings:
        """``settings`` (a BoundSettings, a dict of its fields, or None for the defaults)
        with ``changes``, validated. An unknown name or a bad value is an
        :class:`~pcsos.InputError` whose source is ``source`` (the option the user set)."""
        if settings is None:
            base: dict = {}
        elif isinstance(settings, BoundSettings):
            # not asdict: it would deep-copy a namespace module given as the device
            base = {name: getattr(settings, name) for name in cls.names()}
        elif isinstance(settings, dict):
            base = dict(settings)
        else:
            raise InputError(f"bound settings must be a BoundSettings, a dict or None, got "
                             f"{type(settings).__name__}", source=source)
        base.update(changes)
        unknown = sorted(set(base) - set(cls.names()))
        if unknown:
            raise InputError(f"unknown bound setting(s) {', '.join(map(repr, unknown))}; the "
                             f"settings are {', '.join(cls.names())}", source=source)
        return cls(**base).checked(source)

    def checked(self, source: str = "bound") -> BoundSettings:
        """Self, once every field is valid; else an :class:`~pcsos.InputError` naming the field."""
        def bad(name: str, what: str) -> InputError:
            return InputError(f"{name} must be {what}, got {getattr(self, name)!r}",
                              source=f"{source}.{name}")

        if self.engine not in ENGINES:
            raise bad("engine", f"one of {', '.join(ENGINES)}")
        if self.backend not in BACKENDS:
            raise bad("backend", f"one of {', '.join(BACKENDS)}")
        if not (is_real(self.tol) and math.isfinite(self.tol) and self.tol > 0):
            raise bad("tol", "a positive number")
        if self.max_iter is not None and not (is_integer(self.max_iter) and self.max_iter > 0):
            raise bad("max_iter", "a positive integer or None")
        if self.eig not in eig_methods():
            raise bad("eig", f"one of {', '.join(eig_methods())}")
        if not (is_integer(self.polish) and self.polish >= 0):
            raise bad("polish", "a non-negative integer")
        if isinstance(self.device, str):
            if self.device not in DEVICES:
                raise bad("device", f"one of {', '.join(DEVICES)}")
        else:
            get_backend(self.device)  # an array namespace module: InputError if it is not one
        if self.device != "cpu" and self.backend != "admm":
            raise InputError(f"device={self.device!r} needs backend='admm'; {self.backend} "
                             "runs on the CPU only", source=f"{source}.device")
        if self.anderson is not None and not (is_integer(self.anderson) and self.anderson >= 0):
            raise bad("anderson", "a non-negative integer or None")
        if self.sigma_ratio is not None and not (is_real(self.sigma_ratio)
                                                 and self.sigma_ratio > 1):
            raise bad("sigma_ratio", "a number > 1 or None")
        if not (is_real(self.box) and 0 <= self.box < math.inf):
            raise bad("box", "a finite number >= 0")
        for name in ("exact_every", "child_exact_every"):
            if not (is_integer(getattr(self, name)) and getattr(self, name) > 0):
                raise bad(name, "a positive integer")
        if self.master_method not in MASTER_METHODS:
            raise bad("master_method", f"one of {', '.join(MASTER_METHODS)}")
        if not (is_integer(self.sr_rounds) and self.sr_rounds >= 0):
            raise bad("sr_rounds", "a non-negative integer")
        for name in ("aggregate", "verbose"):
            if not isinstance(getattr(self, name), bool):
                raise bad(name, "True or False")
        return self
