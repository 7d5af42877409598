"""Plots of a real run and of a clustering: the files exist, have the size asked for and
show something (matplotlib is a test extra; without it these tests skip)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import numpy as np
import pytest

import pcsos
import pcsos.plot
from pcsos.errors import BackendUnavailableError

mpl_image = pytest.importorskip("matplotlib.image", reason="matplotlib not installed "
                                "(pip install 'pcsos[plot]')")

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _check_png(path: pathlib.Path, size: tuple[int, int]) -> np.ndarray:
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert path.stat().st_size > 10_000
    img = mpl_image.imread(str(path))
    assert img.shape[:2] == size  # (height, width) at 120 dpi
    rgb = img[..., :3]
    # not blank: a good share of non-white pixels, in several colours
    assert (rgb.min(axis=2) < 0.9).mean() > 0.01
    assert len(np.unique((rgb * 255).astype(np.uint8).reshape(-1, 3), axis=0)) > 20
    return rgb


@pytest.fixture(scope="module")
def branching_run():
    # uniform data, no cuts and a tight tolerance: the tree branches for its 8 nodes
    X = np.random.default_rng(0).uniform(size=(30, 2))
    res = pcsos.solve(X, 3, tol=1e-9, max_nodes=8, workers=1, root_heuristic=None,
                      cp_settings={"families": "none"}, bound_settings={"tol": 1e-3})
    assert res.status == "node_limit" and len(res.log) == 8
    return X, res


def _red_pixels(rgb: np.ndarray) -> int:
    return int(((rgb[..., 0] > 0.8) & (rgb[..., 1] < 0.2) & (rgb[..., 2] < 0.2)).sum())


def test_progress_plot_of_a_real_run(tmp_path, branching_run):
    _, res = branching_run
    out = tmp_path / "progress.png"
    fig = res.plot_progress(out)
    rgb = _check_png(out, (720, 1200))
    assert len(fig.axes) == 4
    # the incumbent line is red: drawn across the top panels
    assert _red_pixels(rgb) > 500


def test_progress_plot_from_the_cli_jsonl(tmp_path):
    X = np.random.default_rng(0).uniform(size=(30, 2))
    data = tmp_path / "u.txt"
    data.write_text("30 2\n" + "".join(f"{a!r} {b!r}\n" for a, b in X.tolist()))
    jl, png = tmp_path / "run.jsonl", tmp_path / "p.png"
    p = subprocess.run([sys.executable, "-m", "pcsos", "solve", str(data), "-k", "3",
                        "--cuts", "none", "--sdp-tol", "1e-3", "--tol", "1e-9",
                        "--max-nodes", "6", "--workers", "1", "--root-heuristic", "none",
                        "--jsonl", str(jl), "-q"], capture_output=True, text=True, cwd=ROOT,
                       timeout=600)
    assert p.returncode == 0, p.stderr
    p = subprocess.run([sys.executable, "-m", "pcsos", "plot", "progress", str(jl), "-o",
                        str(png)], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert p.returncode == 0, p.stderr
    _check_png(png, (720, 1200))


def test_cluster_plot_marks_broken_pairs(tmp_path, branching_run):
    X, res = branching_run
    lab = res.labels
    same = np.flatnonzero(lab == lab[0])
    other = np.flatnonzero(lab != lab[0])
    ml = [(int(same[0]), int(same[1]))]
    cl = [(int(same[0]), int(other[0]))]
    ok = tmp_path / "ok.png"
    fig = pcsos.plot.plot_clusters(X, lab, ml, cl, ok)
    assert "broken" not in fig.axes[0].get_title()
    rgb_ok = _check_png(ok, (720, 840))
    # break one ML and one CL pair: both drawn red, counted in the title
    bad = tmp_path / "bad.png"
    fig = pcsos.plot.plot_clusters(X, lab, [(int(same[0]), int(other[0]))],
                                   [(int(same[0]), int(same[1]))], bad)
    assert "2 broken" in fig.axes[0].get_title()
    rgb_bad = _check_png(bad, (720, 840))
    assert _red_pixels(rgb_bad) > _red_pixels(rgb_ok) + 50


def test_cluster_plot_of_wide_data_uses_principal_components(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 5))
    fig = pcsos.plot.plot_clusters(X, np.arange(40) % 4)
    assert fig.axes[0].get_xlabel().startswith("PC1")


def test_cli_cluster_plot_and_its_errors(tmp_path):
    data = ROOT / "data" / "blobs.txt"
    cons = ROOT / "data" / "blobs_constraints.txt"
    lab, png = tmp_path / "lab.txt", tmp_path / "c.png"
    p = subprocess.run([sys.executable, "-m", "pcsos", "solve", str(data), "-c", str(cons),
                        "-k", "3", "--labels", str(lab), "-q", "--workers", "1"],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert p.returncode == 0, p.stderr

    def plot(*extra):
        return subprocess.run([sys.executable, "-m", "pcsos", "plot", "clusters", str(data),
                               *map(str, extra)], capture_output=True, text=True, cwd=ROOT,
                              timeout=600)

    p = plot("--labels", lab, "-c", cons, "-o", png)
    assert p.returncode == 0, p.stderr
    _check_png(png, (720, 840))
    p = plot("--labels", lab, "-o", tmp_path / "q.png", "-q")  # -q as every command
    assert p.returncode == 0 and p.stdout == "" and (tmp_path / "q.png").exists()
    short = tmp_path / "short.txt"
    short.write_text("0\n1\n")
    p = plot("--labels", short, "-o", tmp_path / "x.png")
    assert p.returncode == 2 and "2 labels for 75 points" in p.stderr
    assert "Traceback" not in p.stderr
    p = plot("--labels", lab, "-o", lab)  # would overwrite an input
    assert p.returncode == 2 and "input file of --labels" in p.stderr
    for out in ("-", tmp_path / "noext"):  # matplotlib wrote './-.png' and 'noext.png'
        p = plot("--labels", lab, "-o", out)
        assert p.returncode == 2 and "format follows its extension" in p.stderr
    assert not (ROOT / "-.png").exists() and not (tmp_path / "noext.png").exists()


def test_missing_matplotlib_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import now fails
    with pytest.raises(BackendUnavailableError, match=r"pip install 'pcsos\[plot\]'"):
        pcsos.plot.plot_clusters(np.zeros((3, 2)), [0, 1, 2])
