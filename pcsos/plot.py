"""Pictures of a run and of a clustering (matplotlib, the optional extra ``pcsos[plot]``).

:func:`~pcsos.plot.plot_progress` draws the certified bound, the incumbent and the gap of a solve
against time and against nodes, from its per-node log rows (``Result.log`` or the
``--jsonl`` file of ``pcsos solve``). :func:`plot_clusters` draws a clustering in two
dimensions (the data itself when d = 2, else its first two principal components), one
colour per cluster, must-link pairs as solid lines and cannot-link pairs as dashed ones;
a pair the clustering breaks is drawn thick and red.

Both build a ``matplotlib.figure.Figure`` without pyplot, so they neither need a display
nor touch the caller's pyplot state, and return it (written to ``path`` when given).
"""

from __future__ import annotations

import contextlib
import math
import os
import warnings
from collections.abc import Iterable, Mapping

import numpy as np

from pcsos.errors import BackendUnavailableError, InputError, PcsosError
from pcsos.io import _lines, _load_json, _quote, _read_text, json_number

__all__ = ["plot_progress", "plot_clusters", "read_run"]


def _figure(figsize):
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise BackendUnavailableError(
            "plots need matplotlib, which is not installed: pip install 'pcsos[plot]'"
        ) from None
    return Figure(figsize=figsize, layout="constrained")


#: the keys of a node row that are drawn: each must be a finite number or null
PLOTTED_KEYS = ("elapsed", "global_lb", "gub", "gap")


def read_run(path) -> list[dict]:
    """The node rows of a ``pcsos solve --jsonl`` file, for :func:`~pcsos.plot.plot_progress`.

    Parameters
    ----------
    path : str or path-like
        The file; blank lines are skipped.

    Returns
    -------
    list of dict
        One row per node, as written (a null stays None; :func:`~pcsos.plot.plot_progress` leaves
        such a value out).

    Raises
    ------
    InputError
        Naming the file and line: a line that is not a JSON object with ``elapsed``, or
        whose drawn values (``PLOTTED_KEYS``) are not finite numbers or null (the writer
        turns inf and nan into null); a file without rows; an unreadable file.
    """
    source = os.fspath(path)
    rows = []
    for t, line in enumerate(_lines(_read_text(source))):
        if not line.strip():
            continue
        row = _load_json(line, source, line=t + 1)
        if not isinstance(row, dict) or "elapsed" not in row:
            raise InputError("not a node row of pcsos solve --jsonl (no 'elapsed')",
                             source=source, line=t + 1)
        for key in PLOTTED_KEYS:
            v = row.get(key)
            if v is None:
                continue
            x = json_number(v)
            if x is None or not math.isfinite(x):
                raise InputError(f"{key!r} must be a finite number or null, got "
                                 f"{_quote(repr(v), quote=False)}", source=source, line=t + 1)
        rows.append(row)
    if not rows:
        raise InputError("no node rows", source=source)
    return rows


@contextlib.contextmanager
def _drawing(source: str):
    """Around building and saving a figure: values that matplotlib cannot lay out (a range of
    1e308 - (-1e308) overflows) become an InputError naming ``source``, and the
    RuntimeWarnings it and numpy print on the way are not shown, since the error (or a
    drawn figure) already says everything."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            yield
    except PcsosError:
        raise
    except (ValueError, OverflowError, TypeError) as exc:
        raise InputError(f"cannot draw these values: {type(exc).__name__}: {exc}",
                         source=source) from None


def _num(v) -> float:
    return math.nan if v is None else float(v)


def plot_progress(rows: Iterable[Mapping], path=None, *, title: str | None = None,
                  source: str = "rows"):
    """Bound, incumbent and gap of a solve against time and against nodes.

    Parameters
    ----------
    rows : iterable of mapping
        The per-node log rows (``Result.log``, or :func:`~pcsos.plot.read_run` of a
        ``--jsonl`` file), whose ``elapsed``, ``global_lb``, ``gub`` and ``gap`` are the
        state of the search after each node. Missing values (no incumbent yet, no bound)
        are left out.
    path : str or path-like, optional
        Where to write the image; the format follows the extension (png, pdf, svg).
    title : str, optional
        The figure's title (default: the nodes and the seconds of the run).
    source : str
        Names the rows in an error (the file they were read from).

    Returns
    -------
    matplotlib.figure.Figure
        Built without pyplot.

    Raises
    ------
    InputError
        No rows, values matplotlib cannot lay out, or an unsupported image format.
    BackendUnavailableError
        matplotlib is not installed (``pip install 'pcsos[plot]'``).
    """
    rows = list(rows)
    if not rows:
        raise InputError("no node rows to plot (an infeasible instance has none)",
                         source=source)
    with _drawing(source):
        fig = _progress_figure(rows, title)
        if path is not None:
            _save(fig, path)
    return fig


def _progress_figure(rows: list[Mapping], title: str | None):
    t = np.array([_num(r.get("elapsed")) for r in rows])
    nodes = np.arange(1, len(rows) + 1)
    lb = np.array([_num(r.get("global_lb")) for r in rows])
    ub = np.array([_num(r.get("gub")) for r in rows])
    gap = np.array([_num(r.get("gap")) for r in rows]) * 100.0
    for a in (lb, ub, gap):
        a[~np.isfinite(a)] = np.nan
    gap[gap <= 0] = np.nan  # a closed gap has no place on a log scale
    fig = _figure((10, 6))
    from matplotlib.ticker import FuncFormatter

    axes = fig.subplots(2, 2, sharex="col")
    for col, (x, xlabel) in enumerate(((t, "time (s)"), (nodes, "nodes"))):
        top, bottom = axes[0, col], axes[1, col]
        # markers: a run of one node (the root closed) is a point, not a step
        top.step(x, ub, where="post", color="tab:red", marker=".",
                 label="incumbent (upper bound)")
        top.step(x, lb, where="post", color="tab:blue", marker=".",
                 label="certified lower bound")
        top.set_ylabel("sum of squares")
        top.ticklabel_format(axis="y", useOffset=False)
        top.grid(True, alpha=0.3)
        if np.isfinite(gap).any():
            bottom.step(x, gap, where="post", color="black", marker=".")
            bottom.set_yscale("log")
            plain = FuncFormatter(lambda v, _: f"{v:g}")  # 0.01, not 10^-2
            bottom.yaxis.set_major_formatter(plain)
            bottom.yaxis.set_minor_formatter(plain)
        bottom.set_ylabel("gap (%)")
        bottom.set_xlabel(xlabel)
        bottom.grid(True, which="both", alpha=0.3)
    axes[0, 0].legend(loc="best", fontsize="small")
    fig.suptitle(title or f"{len(rows)} node{'s' if len(rows) != 1 else ''}, {t[-1]:.1f} s")
    return fig


def _projection(X: np.ndarray) -> tuple[np.ndarray, tuple[str, str]]:
    if X.shape[1] == 1:
        return np.column_stack([X[:, 0], np.zeros(len(X))]), ("x", "")
    if X.shape[1] == 2:
        return X, ("x1", "x2")
    # the components of X / 2**e are those of X; dividing first keeps the mean and the SVD of
    # data near 1e308 from overflowing (exact: a power of two)
    top = float(np.max(np.abs(X))) if X.size else 0.0
    scale = math.ldexp(1.0, math.frexp(top)[1] - 1) if top > 0 else 1.0
    C = X / scale
    C = C - C.mean(axis=0)
    _, sv, Vt = np.linalg.svd(C, full_matrices=False)
    share = sv[:2] ** 2 / max(float((sv ** 2).sum()), 1e-300)
    return (C @ Vt[:2].T) * scale, (f"PC1 ({100 * share[0]:.0f} %)",
                                    f"PC2 ({100 * share[1]:.0f} %)")


def plot_clusters(X, labels, ml=(), cl=(), path=None, *, title: str | None = None,
                  source: str = "X"):
    """The clustering ``labels`` of the rows of ``X`` in 2-D, with its ML / CL pairs.

    Parameters
    ----------
    X : array-like of shape (n, d)
        The points: drawn as they are when d = 2, else on their first two principal
        components (d = 1: on a line).
    labels : array-like of shape (n,)
        One cluster label per point (any values).
    ml, cl : sequence of (i, j) pairs
        Must-link pairs, drawn solid, and cannot-link pairs, drawn dashed; a pair the
        clustering breaks is drawn thick and red and counted in the title.
    path : str or path-like, optional
        Where to write the image; the format follows the extension (png, pdf, svg).
    title : str, optional
        The axes' title (default: the points, clusters and pairs, and the broken pairs).
    source : str
        Names the data in an error (the file they were read from).

    Returns
    -------
    matplotlib.figure.Figure
        Built without pyplot.

    Raises
    ------
    InputError
        Labels not one per point, a pair index out of range, values matplotlib cannot lay
        out, or an unsupported image format.
    BackendUnavailableError
        matplotlib is not installed (``pip install 'pcsos[plot]'``).
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    lab = np.asarray(labels)
    if lab.ndim != 1 or len(lab) != len(X):
        raise InputError(f"expected {len(X)} labels (one per point), got shape {lab.shape}",
                         source="labels")
    ml = np.asarray(ml, dtype=np.int64).reshape(-1, 2)
    cl = np.asarray(cl, dtype=np.int64).reshape(-1, 2)
    for name, P in (("ml", ml), ("cl", cl)):
        if len(P) and (P.min() < 0 or P.max() >= len(X)):
            raise InputError(f"a pair index is out of range 0..{len(X) - 1}", source=name)
    with _drawing(source):
        fig = _clusters_figure(X, lab, ml, cl, title)
        if path is not None:
            _save(fig, path)
    return fig


def _clusters_figure(X, lab, ml, cl, title):
    P2, (xl, yl) = _projection(X)
    fig = _figure((7, 6))
    ax = fig.subplots()
    from matplotlib.collections import LineCollection

    broken = 0
    for pairs, style, bad_if_equal in ((ml, "solid", False), (cl, "dashed", True)):
        if not len(pairs):
            continue
        same = lab[pairs[:, 0]] == lab[pairs[:, 1]]
        bad = same if bad_if_equal else ~same
        broken += int(bad.sum())
        segs = P2[pairs]
        if (~bad).any():
            ax.add_collection(LineCollection(segs[~bad], colors="0.45", linewidths=0.8,
                                             linestyles=style, zorder=1))
        if bad.any():
            ax.add_collection(LineCollection(segs[bad], colors="red", linewidths=2.5,
                                             linestyles=style, zorder=3))
    clusters = np.unique(lab)
    cmap = _colours(len(clusters))
    for c, h in enumerate(clusters):
        m = lab == h
        ax.scatter(P2[m, 0], P2[m, 1], s=18, color=cmap[c], label=f"cluster {h}", zorder=2,
                   edgecolors="none")
    ax.set_xlabel(xl)
    ax.set_ylabel(yl)
    if len(clusters) <= 12:
        ax.legend(loc="best", fontsize="small", markerscale=1.5)
    what = f"{len(X)} points, {len(clusters)} clusters, {len(ml)} ML (solid), {len(cl)} CL " \
           f"(dashed)"
    if broken:
        what += f", {broken} broken (red)"
    ax.set_title(title or what, fontsize="medium")
    ax.autoscale_view()
    return fig


def _colours(m: int) -> list:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if m <= 10 else "tab20" if m <= 20 else "turbo"]
    if m <= 20:
        return [cmap(i) for i in range(m)]
    return [cmap(i / max(1, m - 1)) for i in range(m)]


def _save(fig, path) -> None:
    path = os.fspath(path)
    # checked first, so that a ValueError of savefig itself is one of drawing (see _drawing)
    ext = os.path.splitext(path)[1][1:].lower()
    supported = fig.canvas.get_supported_filetypes()
    if not ext:
        # matplotlib would add '.png' and write another file than the one named ('-' too)
        raise InputError(f"the image's format follows its extension: give {path!r} one "
                         f"({', '.join(sorted(supported))})", source=path)
    if ext not in supported:
        raise InputError(f"Format {ext!r} is not supported (supported formats: "
                         f"{', '.join(sorted(supported))})", source=path)
    existed = os.path.exists(path)
    try:
        fig.savefig(path, dpi=120)
    except BaseException as exc:
        # pdf and svg are written while drawing: a drawing that fails half-way must not leave
        # half an image behind under the user's name
        if not existed:
            with contextlib.suppress(OSError):
                os.remove(path)
        if isinstance(exc, OSError):
            raise InputError(f"cannot write: {exc.strerror}", source=path) from None
        raise
