"""The ADMM over array backends (issue 52): the same algorithm on numpy, on a strict array-API
namespace (the code path a GPU takes, in CI) and, where present, on torch and CUDA.

Every test that runs the device path checks what the numpy path is checked against: the
safe bound below the brute-force optimum, the ADMM at an interior-point reference's value,
the Krylov projection at the dense positive part. CI has no GPU: the CUDA tests skip, and
array-api-strict (a test extra) carries the device code path.
"""

from __future__ import annotations

import math
import sys
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pytest
from bruteforce import brute_force
from conftest import (
    exact_spectrum_matrix,
    needs_clarabel,
    random_instance,
    spectra,
    violated_triangles,
)

import pcsos.bounds.eig as eigmod
from pcsos.bounds import SDPModel, solve_sdp
from pcsos.bounds.arrays import cuda_available, get_backend
from pcsos.bounds.cutset import CutSet
from pcsos.errors import BackendUnavailableError, InfeasibleError, InputError
from pcsos.options import SolverOptions
from pcsos.problem import Problem, make_instance

xps = pytest.importorskip("array_api_strict", reason="needs array-api-strict (pip install "
                          "-e '.[test]')")

needs_cuda = pytest.mark.skipif(not cuda_available(),
                                reason="needs PyTorch and a CUDA GPU (pip install 'pcsos[gpu]')")


def _torch_or_skip():
    return pytest.importorskip("torch", reason="torch not installed (pip install 'pcsos[gpu]')")


def _namespace(name: str):
    """The array namespace a device-path test runs on: array-api-strict, or torch on its CPU
    (the CUDA code path; skips without torch and array-api-compat)."""
    if name == "strict":
        return xps
    torch = _torch_or_skip()
    pytest.importorskip("array_api_compat", reason="needs array-api-compat (pcsos[gpu])")
    return torch


def _model(seed, n, k, n_ml=0, n_cl=0, d=2):
    rng = np.random.default_rng(seed)
    while True:
        X, ml, cl = random_instance(rng, n, d, n_ml, n_cl)
        try:
            P = Problem.from_instance(make_instance(X, k, ml, cl))
        except InfeasibleError:
            continue
        return X, ml, cl, SDPModel.from_problem(P)


# ---------------------------------------------------------------------------- validity
@pytest.mark.parametrize("seed", range(6))
def test_device_path_bound_is_below_brute_force(seed):
    """On the strict namespace, converged and stopped early, the bound is at most the
    brute-force optimum, and the converged bound is tight."""
    n_ml, n_cl = [(0, 0), (2, 0), (0, 3)][seed % 3]
    rng = np.random.default_rng(900 + seed)
    n, k = int(rng.integers(6, 10)), int(rng.integers(2, 4))
    X, ml, cl, model = _model(900 + seed, n, k, n_ml, n_cl)
    opt, _ = brute_force(X, k, ml, cl)
    full = solve_sdp(model, tol=1e-7, device=xps)
    assert full.status == "solved" and full.device.startswith("array_api_strict")
    assert full.lower_bound <= opt + 1e-12 * abs(opt)
    assert abs(full.lower_bound - full.sdp_value) <= 1e-6 * abs(full.sdp_value)
    for it in (1, 5):
        early = solve_sdp(model, max_iter=it, tol=1e-14, device=xps)
        assert early.iterations == it
        assert early.lower_bound <= opt + 1e-12 * abs(opt)


@needs_clarabel
@pytest.mark.parametrize("cuts", [False, True])
def test_device_path_matches_an_interior_point_reference(cuts):
    """With pairs (and triangle and pair cuts), the strict namespace's ADMM reaches
    Clarabel's value, and its bound is at most that value."""
    X, ml, cl, model = _model(950, 20, 3, 2, 3)
    if cuts:
        r0 = solve_sdp(model, tol=1e-8)
        model = model.with_cuts(violated_triangles(r0.Z, 40).concat(CutSet.pairs([0, 1], [2, 3])))
    ref = solve_sdp(model, backend="clarabel", tol=1e-8)
    assert ref.status == "solved"
    r = solve_sdp(model, tol=1e-8, device=xps)
    assert r.status == "solved"
    assert abs(r.sdp_value - ref.sdp_value) <= 1e-6 * abs(ref.sdp_value)
    assert r.lower_bound <= ref.sdp_value + 1e-8 * abs(ref.sdp_value)
    assert abs(r.lower_bound - ref.sdp_value) <= 1e-6 * abs(ref.sdp_value)


@pytest.mark.parametrize("cuts", [False, True])
def test_numpy_and_the_device_path_take_the_same_iterations(cuts):
    """One algorithm: after the same number of iterations the strict namespace stands where
    numpy does (rounding apart; over hundreds of accelerated iterations rounding can move
    the stop by a few), and both converge to the same value."""
    X, ml, cl, model = _model(960, 30, 4, 2, 4)
    if cuts:
        r0 = solve_sdp(model, tol=1e-7)
        model = model.with_cuts(violated_triangles(r0.Z, 30))
    a = solve_sdp(model, max_iter=60, tol=1e-14, polish=0)
    b = solve_sdp(model, max_iter=60, tol=1e-14, polish=0, device=xps)
    assert a.device == "cpu" and b.device != "cpu"
    assert b.primal_residual == pytest.approx(a.primal_residual, rel=1e-6)
    assert b.dual_residual == pytest.approx(a.dual_residual, rel=1e-6)
    assert b.lower_bound == pytest.approx(a.lower_bound, rel=1e-9)
    a, b = solve_sdp(model, tol=1e-7), solve_sdp(model, tol=1e-7, device=xps)
    assert a.status == b.status == "solved"
    assert b.sdp_value == pytest.approx(a.sdp_value, rel=1e-6)


def test_krylov_projection_on_the_device_path_matches_dense(monkeypatch):
    """The block Krylov projection on the strict namespace gives the dense positive part, and
    keeps its block on the device between calls."""
    monkeypatch.setattr(eigmod, "KRYLOV_ROOM", 4)
    be = get_backend(xps)
    rng = np.random.default_rng(970)
    s, r = 160, 5
    U, _ = np.linalg.qr(rng.normal(size=(s, s)))
    lam = -0.3 * rng.random(s)
    lam[:r] = 0.5 + 0.1 * rng.random(r)
    W = (U * lam) @ U.T
    W = 0.5 * (W + W.T)
    ref = (U[:, :r] * lam[:r]) @ U[:, :r].T
    project = eigmod.projector("krylov", be)
    for step in range(3):  # the first call seeds the block, the next ones iterate
        Wd = be.asarray(W + 1e-4 * step * np.eye(s))
        vals, vecs = project(Wd, r, None)
        P = be.to_numpy((vecs * vals) @ vecs.T)
        lam_s = lam + 1e-4 * step
        ref = (U[:, :r] * lam_s[:r]) @ U[:, :r].T
        np.testing.assert_allclose(P, ref, atol=1e-8)
    stats = project.instances["krylov"].stats
    assert stats["krylov"] >= 1 and not isinstance(project.instances["krylov"].X, np.ndarray)


def test_admm_with_krylov_on_the_device_path_follows_numpy(monkeypatch):
    """30 ADMM iterations with eig='krylov' end on numpy's residuals on the strict namespace
    (the projection is stopped at an accuracy, so to a few digits, not bit for bit)."""
    monkeypatch.setattr(eigmod, "KRYLOV_ROOM", 4)
    rng = np.random.default_rng(980)
    centres = rng.normal(size=(3, 4)) * 3
    X = centres[rng.integers(0, 3, size=150)] + rng.normal(size=(150, 4))
    model = SDPModel.from_problem(Problem.from_instance(make_instance(X, 3)))
    a = solve_sdp(model, max_iter=30, tol=1e-14, eig="krylov", polish=0)
    b = solve_sdp(model, max_iter=30, tol=1e-14, eig="krylov", polish=0, device=xps)
    assert b.primal_residual == pytest.approx(a.primal_residual, rel=1e-4)
    assert b.dual_residual == pytest.approx(a.dual_residual, rel=1e-4)
    assert b.lower_bound == pytest.approx(a.lower_bound, rel=1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_safe_bound_eigenvalues_on_the_device_path(seed):
    """The safe bound and its polishing with their eigenvalues taken on the strict
    namespace: at most the brute-force optimum at any duals (an early iterate's, and zero
    duals), and the host's bound up to the eigensolvers' rounding."""
    from pcsos.bounds.safe import polished_bound, safe_lower_bound

    n_ml, n_cl = [(0, 0), (2, 2)][seed % 2]
    X, ml, cl, model = _model(1000 + seed, 8, 3, n_ml, n_cl)
    opt, _ = brute_force(X, 3, ml, cl)
    be = get_backend(xps)
    early = solve_sdp(model, max_iter=5, tol=1e-14, polish=0)
    for y, y_cl, u, N in ((early.y, early.y_cl, early.u, early.N),
                          (np.zeros(model.s + 1), None, None, None)):
        host = safe_lower_bound(model, y, y_cl, u, N)
        dev = safe_lower_bound(model, y, y_cl, u, N, backend=be)
        assert dev <= opt + 1e-12 * abs(opt)
        assert dev == pytest.approx(host, rel=1e-10, abs=1e-9)
        lb, *_ = polished_bound(model, y, y_cl, u, N, backend=be)
        assert host - 1e-9 * abs(host) <= lb <= opt + 1e-12 * abs(opt)


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("xp", ["strict", "torch"])
def test_eigenvalue_certificate_on_the_device_path(seed, xp, monkeypatch):
    """The Ky Fan certificate (LOBPCG steps, deflation, Cholesky) run on the namespace
    (strict, or torch's CPU): never above the exact sum of the k smallest eigenvalues on
    matrices whose spectrum is exact, and where it goes through on the host it goes through
    here too, within the steps' rounding of the host's value. The steps and the
    factorisation take the namespace's arrays, not numpy's."""
    import pcsos.bounds.safe as safemod

    ky_fan_certificate = safemod.ky_fan_certificate
    seen = set()
    for name, fn in (("steps", eigmod.top_pairs), ("cholesky", safemod._shifted_cholesky)):
        def spy(*args, _fn=fn, _name=name, **kwargs):
            arrays = [a for a in args if hasattr(a, "shape")]
            seen.add((_name, isinstance(arrays[0], np.ndarray)))
            return _fn(*args, **kwargs)
        monkeypatch.setattr(eigmod if name == "steps" else safemod,
                            "top_pairs" if name == "steps" else "_shifted_cholesky", spy)
    rng = np.random.default_rng(1100 + seed)
    be = get_backend(_namespace(xp))
    s, proved = 160, 0
    for k in (1, 3):
        for name, lam in spectra(rng, s, k):
            A = exact_spectrum_matrix(rng, lam)
            exact = math.fsum(np.sort(lam)[:k])
            host_info, dev_info = {}, {}
            host = ky_fan_certificate(A, k, None, info=host_info)
            dev = ky_fan_certificate(A, k, None, info=dev_info, backend=be)
            if dev is not None:
                assert dev <= exact, (name, k, dev_info)
            if host is not None:
                assert dev is not None, (name, k, dev_info)
                assert dev == pytest.approx(host, rel=1e-8, abs=1e-8 * np.linalg.norm(A))
                proved += 1
    assert proved >= 4
    # the host's calls take numpy arrays, the device's the namespace's
    assert seen == {("steps", True), ("steps", False), ("cholesky", True), ("cholesky", False)}


@pytest.mark.parametrize("xp", ["strict", "torch"])
def test_shifted_cholesky_reads_the_upper_triangle_on_every_backend(xp):
    """The factorisation the certificate's proof is about is that of the upper triangle's
    symmetric matrix: a lower triangle that would make H indefinite is ignored on numpy and
    on the strict namespace alike; an indefinite upper triangle fails on both."""
    from pcsos.bounds.safe import _shifted_cholesky

    rng = np.random.default_rng(12)
    B = rng.normal(size=(30, 30))
    pd = B @ B.T + 30 * np.eye(30)
    junk = np.triu(pd) + np.tril(-1e3 * np.ones((30, 30)), -1)
    indefinite = pd.copy()
    indefinite[0, 1] = indefinite[1, 0] = 1e3
    for be in (get_backend("cpu"), get_backend(_namespace(xp))):
        for H, c, ok in ((junk, 1.0, True), (indefinite, 1.0, False), (pd, 1e4, False)):
            diag, got = _shifted_cholesky(be, be.asarray(H.copy()), c)
            assert got is ok, (be.name, c)
            assert np.array_equal(diag, np.diag(H) - c)


@pytest.mark.parametrize("xp", ["strict", "torch"])
def test_safe_bound_certificate_on_the_device_path(monkeypatch, xp):
    """Past ITERATIVE_MIN_S (lowered here) the safe bound takes the certificate, not the
    dense eigensolver, on the strict namespace as on the host: at any duals at most the
    dense bound's value without its margin, and the host's certified bound to rounding."""
    import pcsos.bounds.safe as safemod

    _, _, _, model = _model(1200, 60, 2, 2, 2)
    r = solve_sdp(model, max_iter=40, tol=1e-14, polish=0)
    dense = safemod.safe_lower_bound(model, r.y, r.y_cl, r.u, r.N)
    used = []
    certificate = safemod.ky_fan_certificate

    def spy(*args, **kwargs):
        info = {}
        out = certificate(*args, **kwargs, info=info)
        used.append(info.get("ok"))
        return out

    monkeypatch.setattr(safemod, "ITERATIVE_MIN_S", 40)
    monkeypatch.setattr(safemod, "ky_fan_certificate", spy)
    host = safemod.safe_lower_bound(model, r.y, r.y_cl, r.u, r.N, start=r.Z[:, :4])
    dev = safemod.safe_lower_bound(model, r.y, r.y_cl, r.u, r.N, start=r.Z[:, :4],
                                   backend=get_backend(_namespace(xp)))
    assert used == [True, True]
    slack = 1e-9 * max(1.0, abs(dense))
    assert dev <= dense + slack and host <= dense + slack
    assert dev == pytest.approx(host, rel=1e-9)
    assert dev >= dense - 1e-5 * max(1.0, abs(dense))


# ---------------------------------------------------------------------------- streams
@dataclass(frozen=True)
class _FakeCudaDevice:
    type: str = "cuda"
    index: int = 0


class _FakeTorch:
    """torch.cuda's Stream and stream() as ArrayBackend.stream uses them, recorded."""

    def __init__(self):
        self.made, self.entered = [], []
        self.cuda = self

    def Stream(self, device):  # noqa: N802 (torch's name)
        self.made.append(object())
        return self.made[-1]

    @contextmanager
    def stream(self, s):
        self.entered.append(s)
        yield


def test_each_thread_solves_on_a_cuda_stream_of_its_own(monkeypatch):
    """On CUDA, a thread gets one stream for its life and another thread another; off CUDA,
    or with THREAD_STREAMS off, no stream is made."""
    import threading

    import pcsos.bounds.arrays as arrays

    fake = _FakeTorch()
    be = arrays.ArrayBackend("torch", xps, _FakeCudaDevice(), "fake cuda", fake)

    def twice():
        for _ in range(2):
            with be.stream():
                pass

    twice()
    other = threading.Thread(target=twice)
    other.start()
    other.join()
    assert len(fake.made) == 2
    assert fake.entered == [fake.made[0]] * 2 + [fake.made[1]] * 2
    cpu = arrays.ArrayBackend("torch", xps, _FakeCudaDevice("cpu"), "fake cpu", fake)
    with cpu.stream(), get_backend("cpu").stream(), get_backend(xps).stream():
        pass
    monkeypatch.setattr(arrays, "THREAD_STREAMS", False)
    with be.stream():
        pass
    assert len(fake.made) == 2 and len(fake.entered) == 4


def test_the_whole_solve_runs_inside_the_backend_stream(monkeypatch):
    """Every array the ADMM puts on the device and every eigendecomposition (the safe
    bound's too) is made inside the backend's stream context, entered once per solve."""
    import pcsos.bounds.arrays as arrays

    inside, outside, entered = [False], [], []

    @contextmanager
    def stream(self):
        entered.append(self.label)
        inside[0] = True
        try:
            yield
        finally:
            inside[0] = False

    def recorded(method):
        def run(self, *args, **kwargs):
            if not inside[0]:
                outside.append(method.__name__)
            return method(self, *args, **kwargs)
        return run

    monkeypatch.setattr(arrays.ArrayBackend, "stream", stream)
    for name in ("asarray", "eigh", "zeros"):
        monkeypatch.setattr(arrays.ArrayBackend, name,
                            recorded(getattr(arrays.ArrayBackend, name)))
    _, _, _, model = _model(1201, 20, 3, 2, 2)
    r = solve_sdp(model, max_iter=30, tol=1e-14, device=xps)
    assert r.iterations == 30 and math.isfinite(r.lower_bound)
    assert entered == [r.device] and outside == []


# ---------------------------------------------------------------------------- errors
def test_device_errors_are_clear(monkeypatch):
    X, ml, cl, model = _model(990, 8, 2)
    with pytest.raises(InputError, match="device must be one of cpu, cuda, auto"):
        solve_sdp(model, device="gpu")
    with pytest.raises(InputError, match="runs on the CPU only"):
        solve_sdp(model, device=xps, eig="full32")
    with pytest.raises(InputError, match="needs backend='admm'"):
        solve_sdp(model, backend="clarabel", device="cuda")
    with pytest.raises(InputError, match="device must be one of"):
        SolverOptions(bound_settings={"device": "gpu"}).checked()
    with pytest.raises(InputError, match="needs backend='admm'"):
        SolverOptions(bound_settings={"device": "auto", "backend": "mosek"}).checked()
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now raises ImportError
    with pytest.raises(BackendUnavailableError, match=r"needs PyTorch.*pcsos\[gpu\]"):
        solve_sdp(model, device="cuda")
    with pytest.raises(BackendUnavailableError, match="needs PyTorch"):
        SolverOptions(bound_settings={"device": "cuda"}).checked()
    # 'auto' without a GPU is the CPU
    assert get_backend("auto").label == "cpu"
    assert solve_sdp(model, device="auto").device == "cpu"


def test_cli_device_without_a_gpu_is_a_clear_error(tmp_path, monkeypatch, capsys):
    from pcsos.cli import main

    monkeypatch.setitem(sys.modules, "torch", None)
    data = tmp_path / "d.txt"
    data.write_text("6 2\n0 0\n0 1\n1 0\n5 5\n5 6\n6 5\n")
    code = main(["bound", str(data), "-k", "2", "--device", "cuda"])
    assert code == 2
    assert "device='cuda' needs PyTorch" in capsys.readouterr().err
    assert main(["bound", str(data), "-k", "2", "--device", "auto"]) == 0
    assert "device:          cpu" in capsys.readouterr().out


# ---------------------------------------------------------------------------- torch, CUDA
def _agree_with_numpy(device):
    X, ml, cl, model = _model(995, 30, 4, 2, 4)
    r0 = solve_sdp(model, tol=1e-7)
    mc = model.with_cuts(violated_triangles(r0.Z, 30))
    for m in (model, mc):
        a = solve_sdp(m, max_iter=60, tol=1e-14, polish=0)
        b = solve_sdp(m, max_iter=60, tol=1e-14, polish=0, device=device)
        assert b.primal_residual == pytest.approx(a.primal_residual, rel=1e-6)
        assert b.lower_bound == pytest.approx(a.lower_bound, rel=1e-9)
    return b


def test_torch_code_path_on_the_cpu():
    """torch's own in-place operations (the CUDA code path) on torch's CPU device."""
    torch = _torch_or_skip()
    pytest.importorskip("array_api_compat", reason="needs array-api-compat (pcsos[gpu])")
    assert _agree_with_numpy(torch).device == "torch (cpu)"


@needs_cuda
def test_cuda_agrees_with_numpy():
    assert _agree_with_numpy("cuda").device.startswith("cuda")
