"""Fuzz test of every reader of pcsos (issue 29): mutated files end in a clear error.

Each reader gets mutants of a shipped file (``data/blobs.*``, or a file derived from it:
labels from the CSV class column, the result matrix, a ``Result`` JSON, a JSONL progress
log): byte flips, truncation, CRLF or CR line ends, a UTF-8 BOM, numbers replaced by huge,
tiny or non-finite ones, a row of 10^5 columns, a very long line, random unicode, binary
junk, deleted and repeated lines, the empty file. Every case runs in a fresh directory as
cwd and must end with exit code 0, 2 or 3 (direct reader calls: a result, or a
``PcsosError``), at most one line on stderr, no traceback, no warning (the CLI would print
it), and no file but the inputs and the named output. Checkpoints are fuzzed with the
checkpoint code.

Cases: ``CASES`` in the normal suite (200 in all); ``-m slow`` runs ``SLOW_FACTOR`` times as
many (5 000). ``derandomize=True``: the same cases on every run.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import pathlib
import re
import tempfile
import warnings

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pcsos.api import Result  # noqa: E402
from pcsos.cli import main  # noqa: E402
from pcsos.errors import InputError, PcsosError  # noqa: E402
from pcsos.io import (  # noqa: E402
    read_constraints,
    read_data,
    read_labels,
    read_result_matrix,
)
from pcsos.plot import plot_progress, read_run  # noqa: E402
from pcsos.problem import check_start, make_instance  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = ROOT / "data"

#: examples per reader in the normal suite (200 in all)
CASES = {
    "data_txt": 35, "data_csv": 25, "data_numpy": 15, "constraints_txt": 35,
    "constraints_json": 20, "labels": 20, "result_matrix": 10, "result_json": 15,
    "jsonl": 15, "plot_clusters": 10,
}
#: the slow suite runs this many times as many (5 000 in all)
SLOW_FACTOR = 25
SCALES = [pytest.param(False, id="normal"),
          pytest.param(True, id="slow", marks=pytest.mark.slow)]


def test_case_counts():
    assert sum(CASES.values()) == 200
    assert sum(CASES.values()) * SLOW_FACTOR == 5000


# ---------------------------------------------------------------------------- seed files
def _seeds() -> dict[str, bytes]:
    """The shipped files, and files of the other formats made from them (nothing shipped
    has labels, a result or a progress log)."""
    seeds = {name: (DATA / name).read_bytes()
             for name in ("blobs.txt", "blobs.csv", "blobs.json", "blobs_constraints.txt")}
    # DELTA / GAMMA are in no shipped file; thresholds that add a few pairs, no conflict
    seeds["delta_gamma.txt"] = b"DELTA 0.02\nGAMMA 6\nML 0 12\nCL 2 53\n"
    rows = list(csv.reader(io.StringIO(seeds["blobs.csv"].decode())))[1:]
    X = np.array([[float(v) for v in r[:-1]] for r in rows])
    y = np.array([int(r[-1]) for r in rows])
    seeds["labels.txt"] = "".join(f"{v}\n" for v in y).encode()
    seeds["result.txt"] = "".join(" ".join("1" if c == v else "0" for c in range(3)) + "\n"
                                  for v in y).encode()
    buf = io.BytesIO()
    np.save(buf, X)
    seeds["blobs.npy"] = buf.getvalue()
    buf = io.BytesIO()
    np.savez(buf, X=X, y=y)
    seeds["blobs.npz"] = buf.getvalue()
    # the node rows of a short solve of blobs.txt (as pcsos solve --jsonl writes them)
    log = [
        {"n": 75, "node": 0, "node_parent": -1, "kind": "root", "lb": 106.66273866727504,
         "ub": 106.69790806879999, "gub": 106.69790806879999, "improved": True,
         "global_lb": 106.66273866727504, "gap": 0.00032961659850234265, "open": 2,
         "depth": 0, "branch": [49, 66], "elapsed": 0.042571067810058594},
        {"n": 74, "node": 1, "node_parent": 0, "kind": "ml", "lb": 116.32823053241643,
         "ub": None, "gub": 106.69790806879999, "improved": False, "closed": "pruned",
         "global_lb": 106.66273866727504, "gap": 0.00032961659850234265, "open": 1,
         "depth": 1, "elapsed": 0.05914878845214844},
        {"n": 75, "node": 2, "node_parent": 0, "kind": "cl", "lb": 106.69790806879999,
         "ub": 106.69790806879999, "gub": 106.69790806879999, "improved": False,
         "global_lb": 106.69790806879999, "gap": 0.0, "open": 0, "depth": 1,
         "elapsed": 0.0812},
    ]
    seeds["run.jsonl"] = "".join(json.dumps(r) + "\n" for r in log).encode()
    res = Result(labels=y, objective=106.69790806879999, lower_bound=106.69790806879999,
                 gap=0.0, status="optimal", message="optimal within the tolerance", nodes=3,
                 seconds=0.0812, root_lower_bound=106.66273866727504,
                 root_gap=0.00032961659850234265, root_size=75, log=log, n=75, k=3)
    seeds["result.json"] = res.to_json(log=True, data="data/blobs.txt").encode()
    bad = Result(labels=None, objective=math.inf, lower_bound=math.inf, gap=math.inf,
                 status="infeasible", message="cannot-link (0, 2) joins ...",
                 infeasible_pairs=[(0, 2)], n=75, k=3)
    seeds["infeasible.json"] = bad.to_json().encode()
    return seeds


SEEDS = _seeds()
BLOBS = read_data(DATA / "blobs.txt")
BLOBS_CONS = read_constraints(DATA / "blobs_constraints.txt", n=BLOBS.n)
INSTANCE = make_instance(BLOBS.X, 3, BLOBS_CONS.ml, BLOBS_CONS.cl)

# ---------------------------------------------------------------------------- mutations
#: what replaces a number: out of range, subnormal, non-finite, unusual spellings
SPECIAL = [
    b"1e308", b"-1e308", b"1.7976931348623157e308", b"1e400", b"-1e400", b"1e-320",
    b"-1e-320", b"5e-324", b"1e-400", b"0", b"-0", b"-1", b"nan", b"NaN", b"-nan", b"inf",
    b"-inf", b"Infinity", b"99999999999999999999999", b"9223372036854775808",
    b"9" * 5000, b"0x1p3", b"1_0", "\u0661".encode(), "\uff13".encode(), b"1.5", b"3.0",
    b"true", b"null", b"[]", b"{}", b'"7"', b"\x00", b"",
]
#: pieces of very long lines: digits, columns, letters, JSON nesting, 3-byte characters
LONG_UNITS = [b"1", b"1 ", b"0 ", b"1,", b"x", b"[", b"{\"a\":", "\u20ac".encode()]
NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
OPS = ["flip", "truncate", "crlf", "cr", "bom", "number", "number", "number", "wide_row",
       "long_line", "unicode", "junk", "delete_line", "repeat_line"]


def _line_starts(data: bytes) -> list[int]:
    return [0] + [m.end() for m in re.finditer(rb"\n", data)]


@st.composite
def mutants(draw, seed: bytes) -> bytes:
    """``seed`` after one to three mutations, or (1 case in 20) the empty file or junk."""
    whole = draw(st.integers(0, 19))
    if whole == 0:
        return draw(st.sampled_from([b"", b"\n", b"\xef\xbb\xbf", b"\r\n\r\n"]))
    if whole == 1:
        return draw(st.binary(min_size=1, max_size=300))
    data = bytes(seed)
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(OPS))
        pos = draw(st.integers(0, len(data)))
        if op == "flip" and data:
            buf = bytearray(data)
            for _ in range(draw(st.integers(1, 8))):
                buf[draw(st.integers(0, len(buf) - 1))] ^= draw(st.integers(1, 255))
            data = bytes(buf)
        elif op == "truncate":
            data = data[:pos]
        elif op == "crlf":
            data = data.replace(b"\n", b"\r\n")
        elif op == "cr":
            data = data.replace(b"\n", b"\r")
        elif op == "bom":
            data = b"\xef\xbb\xbf" + data
        elif op == "number":
            found = list(NUMBER.finditer(data))
            if found:
                m = found[draw(st.integers(0, len(found) - 1))]
                data = data[:m.start()] + draw(st.sampled_from(SPECIAL)) + data[m.end():]
        elif op in ("wide_row", "long_line", "delete_line", "repeat_line"):
            starts = _line_starts(data)
            t = draw(st.integers(0, len(starts) - 1))
            at = starts[t]
            end = starts[t + 1] if t + 1 < len(starts) else len(data)
            if op == "wide_row":  # 10^5 columns, in the separator of text or of CSV
                sep = draw(st.sampled_from([b" ", b","]))
                line = sep.join([b"0.5"] * 100_000) + b"\n"
                data = data[:at] + line + data[at:]
            elif op == "long_line":
                unit = draw(st.sampled_from(LONG_UNITS))
                line = unit * (200_000 // len(unit)) + b"\n"
                data = data[:at] + line + data[at:]
            elif op == "delete_line":
                data = data[:at] + data[end:]
            else:
                data = data[:at] + data[at:end] * draw(st.integers(2, 5)) + data[end:]
        elif op == "unicode":
            text = draw(st.text(min_size=1, max_size=20))
            data = data[:pos] + text.encode("utf-8", "surrogatepass") + data[pos:]
        elif op == "junk":
            data = data[:pos] + draw(st.binary(min_size=1, max_size=64)) + data[pos:]
    return data


def _fuzz(name: str, slow: bool):
    """The hypothesis settings of reader ``name``: reproducible, no deadline, no database."""
    n = CASES[name] * (SLOW_FACTOR if slow else 1)
    return settings(max_examples=n, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))


# ---------------------------------------------------------------------------- one case
@contextlib.contextmanager
def _case_dir(inputs: dict[str, bytes]):
    """A fresh directory holding ``inputs``, as the current directory; yields its path."""
    old = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="pcsos-fuzz-") as tmp:
        for name, blob in inputs.items():
            pathlib.Path(tmp, name).write_bytes(blob)
        os.chdir(tmp)
        try:
            yield tmp
        finally:
            os.chdir(old)


def _files(tmp: str) -> set[str]:
    return {os.path.relpath(os.path.join(d, f), tmp)
            for d, _, names in os.walk(tmp) for f in names}


@contextlib.contextmanager
def _shown_warnings():
    """Record the warnings a CLI run would print (the categories Python shows by default)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for cat in (DeprecationWarning, PendingDeprecationWarning, ImportWarning,
                    ResourceWarning):
            warnings.simplefilter("ignore", cat)
        yield caught


def _check_outcome(capfd, caught, tmp, inputs, outputs, what):
    _, err = capfd.readouterr()
    left = _files(tmp) - set(inputs) - set(outputs)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert "Traceback" not in err, f"{what}: {err}"
    assert len(lines) <= 1, f"{what}: more than one line on stderr:\n{err}"
    assert not caught, f"{what}: warnings: {[str(w.message) for w in caught]}"
    assert not left, f"{what}: stray files {sorted(left)}"
    return err


def run_cli(capfd, argv: list[str], inputs: dict[str, bytes], outputs=()) -> int:
    """``pcsos ARGV`` in-process in a fresh directory; asserts the issue's conditions."""
    with _case_dir(inputs) as tmp:
        capfd.readouterr()
        with _shown_warnings() as caught:
            try:
                rc = main(argv)
            except SystemExit as exc:  # argparse's own exit (a usage error)
                rc = exc.code
        err = _check_outcome(capfd, caught, tmp, inputs, outputs, argv)
    assert rc in (0, 2, 3), f"{argv}: exit {rc}: {err}"
    return rc


def run_reader(capfd, call, inputs: dict[str, bytes]):
    """``call()`` (a reader on ``inputs``) in a fresh directory: a result or a PcsosError."""
    with _case_dir(inputs) as tmp:
        capfd.readouterr()
        with _shown_warnings() as caught:
            try:
                out = call()
            except PcsosError as exc:
                out = exc
        _check_outcome(capfd, caught, tmp, inputs, (), call)
    return out


# ---------------------------------------------------------------------------- data files
CHECK = ["--time-limit", "30"]  # a time limit never met here: the instances are tiny


def _check_argv(data: str, k, cons: bool) -> list[str]:
    argv = ["check", data, *CHECK]
    if k is not None:
        argv += ["-k", k]
    if cons:
        argv += ["-c", "c.txt"]
    return argv


@pytest.mark.parametrize("slow", SCALES)
def test_fuzz_data_text(capfd, slow):
    """pc-sos-sdp data (``n d k`` header) through ``pcsos check``, with and without pairs."""
    @_fuzz("data_txt", slow)
    @given(blob=mutants(SEEDS["blobs.txt"]), k=st.sampled_from([None, "1", "3"]),
           cons=st.booleans())
    def case(blob, k, cons):
        inputs = {"d.txt": blob}
        if cons:
            inputs["c.txt"] = SEEDS["blobs_constraints.txt"]
        run_cli(capfd, _check_argv("d.txt", k, cons), inputs)

    case()


@pytest.mark.parametrize("slow", SCALES)
def test_fuzz_data_csv(capfd, slow):
    """CSV data with a ``class`` column through ``pcsos check``."""
    @_fuzz("data_csv", slow)
    @given(blob=mutants(SEEDS["blobs.csv"]), k=st.sampled_from([None, "3"]),
           cons=st.booleans())
    def case(blob, k, cons):
        inputs = {"d.csv": blob}
        if cons:
            inputs["c.txt"] = SEEDS["blobs_constraints.txt"]
        run_cli(capfd, _check_argv("d.csv", k, cons), inputs)

    case()


@pytest.mark.parametrize("slow", SCALES)
def test_fuzz_data_numpy(capfd, slow):
    """``.npy`` and ``.npz`` data (made from blobs.txt) through ``pcsos check``; no pickle is
    ever loaded (allow_pickle=False, and files that are neither format are refused first)."""
    @_fuzz("data_numpy", slow)
    @given(name=st.sampled_from(["blobs.npy", "blobs.npz"]), data=st.data())
    def case(name, data):
        blob = data.draw(mutants(SEEDS[name]))
        ext = data.draw(st.sampled_from([name[-4:], ".npy" if name.endswith("z") else ".npz"]))
        run_cli(capfd, _check_argv("d" + ext, "3", False), {"d" + ext: blob})

    case()


# ---------------------------------------------------------------------------- constraints
@pytest.mark.parametrize("slow", SCALES)
def test_fuzz_constraints_text(capfd, slow):
    """ML / CL / DELTA / GAMMA files through ``pcsos check`` on blobs.txt."""
    @_fuzz("constraints_txt", slow)
    @given(seed=st.sampled_from(["blobs_constraints.txt", "delta_gamma.txt"]), data=st.data())
    def case(seed, data):
        blob = data.draw(mutants(SEEDS[seed]))
        inputs = {"d.txt": SEEDS["blobs.txt"], "c.txt": blob}
        run_cli(capfd, _check_argv("d.txt", None, True), inputs)

    case()


@pytest.mark.parametrize("slow", SCALES)
def test_fuzz_constraints_json(capfd, slow):
    """PCCC JSON constraints through ``pcsos check`` on blobs.txt."""
    @_fuzz("constraints_json", slow)
    @given(blob=mutants(SEEDS["blobs.json"]))
    def case(blob):
        inputs = {"d.txt": SEEDS["blobs.txt"], "c.json": blob}
        run_cli(capfd, ["check", "d.txt", "-c", "c.json", *CHECK], inputs)

    case()


# ---------------------------------------------------------------------------- results
@pytest.mark.parametrize("slow", SCALES)
def test_fuzz_labels(capfd, slow):
    """Label files, as ``--labels`` (certify, impact, plot clusters) and ``--init-labels``
    (solve) read them: ``read_labels``, then the start check of ``pcsos solve``."""
    @_fuzz("labels", slow)
    @given(blob=mutants(SEEDS["labels.txt"]))
    def case(blob):
        def call():
            lab = read_labels("l.txt")
            assert lab.dtype == np.int64 and lab.ndim == 1 and (lab >= 0).all()
            return check_start(INSTANCE, lab, source="l.txt")

        run_reader(capfd, call, {"l.txt": blob})

    case()


@pytest.mark.parametrize("slow", SCALES)
def test_fuzz_result_matrix(capfd, slow):
    """The n x k 0/1 result matrix of pc-sos-sdp (``read_result_matrix``)."""
    @_fuzz("result_matrix", slow)
    @given(blob=mutants(SEEDS["result.txt"]))
    def case(blob):
        def call():
            lab = read_result_matrix("r.txt")
            assert lab.dtype == np.int64 and lab.ndim == 1
            return lab

        run_reader(capfd, call, {"r.txt": blob})

    case()


@pytest.mark.parametrize("slow", SCALES)
def test_fuzz_result_json(capfd, slow):
    """``Result.from_json`` on a file, on its text and on its parsed dict."""
    @_fuzz("result_json", slow)
    @given(seed=st.sampled_from(["result.json", "infeasible.json"]), data=st.data())
    def case(seed, data):
        blob = data.draw(mutants(SEEDS[seed]))

        def call():
            res = Result.from_json("r.json")
            assert res.labels is None or res.labels.dtype == np.int64
            try:
                text = blob.decode("utf-8")
            except UnicodeDecodeError:
                return res
            if text.lstrip().startswith("{"):  # other text is taken for a path
                assert Result.from_json(text).status == res.status
                assert Result.from_json(json.loads(text)).status == res.status
            return res

        run_reader(capfd, call, {"r.json": blob})

    case()


# ---------------------------------------------------------------------------- plots
@pytest.mark.parametrize("slow", SCALES)
def test_fuzz_progress_log(capfd, slow):
    """The ``--jsonl`` log of ``pcsos solve`` through ``pcsos plot progress``."""
    @_fuzz("jsonl", slow)
    @given(blob=mutants(SEEDS["run.jsonl"]), ext=st.sampled_from(["png", "svg"]))
    def case(blob, ext):
        out = f"p.{ext}"
        rc = run_cli(capfd, ["plot", "progress", "run.jsonl", "-o", out],
                     {"run.jsonl": blob}, outputs=[out])
        assert rc in (0, 2)

    case()


@pytest.mark.parametrize("slow", SCALES)
def test_fuzz_plot_clusters(capfd, slow):
    """``pcsos plot clusters`` with one of its three inputs (data, --labels, -c) mutated."""
    @_fuzz("plot_clusters", slow)
    @given(which=st.sampled_from(["d.txt", "l.txt", "c.txt"]), data=st.data())
    def case(which, data):
        inputs = {"d.txt": SEEDS["blobs.txt"], "l.txt": SEEDS["labels.txt"],
                  "c.txt": SEEDS["blobs_constraints.txt"]}
        seed = {"d.txt": "blobs.txt", "l.txt": "labels.txt",
                "c.txt": "blobs_constraints.txt"}[which]
        inputs[which] = data.draw(mutants(SEEDS[seed]))
        rc = run_cli(capfd, ["plot", "clusters", "d.txt", "--labels", "l.txt", "-c", "c.txt",
                             "-o", "c.png"], inputs, outputs=["c.png"])
        assert rc in (0, 2)

    case()


# ---------------------------------------------------------------------------- regressions
# each a case the fuzzer found: before the fix, an internal error (exit 1) or a traceback
@pytest.mark.parametrize("text, words", [
    ("x0,x1,class\n1,2,0\n3,4,1e308\n", "d.csv:3: class label '1e308' is too large"),
    ("x0,x1,class\n1,2,0\n3,4,99999999999999999999999\n", "d.csv:3: class label"),
])
def test_huge_csv_class_label_is_an_input_error(tmp_path, text, words):
    (tmp_path / "d.csv").write_text(text)
    with pytest.raises(InputError, match=re.escape(words)):
        read_data(tmp_path / "d.csv")


def test_huge_label_is_an_input_error(tmp_path):
    (tmp_path / "l.txt").write_text("0\n1\n9223372036854775808\n")
    with pytest.raises(InputError, match=r"l.txt:3: label '9223372036854775808' is too large"):
        read_labels(tmp_path / "l.txt")
    (tmp_path / "l.txt").write_text("0\n1\n9223372036854775807\n")
    assert read_labels(tmp_path / "l.txt")[-1] == 2 ** 63 - 1


def test_huge_index_without_n_is_out_of_range(tmp_path):
    (tmp_path / "c.txt").write_text("ML 0 99999999999999999999\n")
    with pytest.raises(InputError, match="c.txt:1: index out of range"):
        read_constraints(tmp_path / "c.txt")
    (tmp_path / "c.json").write_text('{"ml": [[0, 99999999999999999999]]}')
    with pytest.raises(InputError, match=r"ml\[0\].*index out of range"):
        read_constraints(tmp_path / "c.json")


@pytest.mark.parametrize("text, words", [
    ('{"ml": ' + "[" * 100_000 + "}", "invalid JSON: nested too deeply"),
    ('{"ml": [[0, ' + "9" * 5000 + "]]}", "invalid JSON: an integer of more than 4300 digits"),
], ids=lambda v: None if len(v) < 60 else f"{len(v)}-chars")
def test_json_constraints_too_deep_or_too_long_an_integer(tmp_path, text, words):
    (tmp_path / "c.json").write_text(text)
    with pytest.raises(InputError, match=words):
        read_constraints(tmp_path / "c.json", n=5)


@pytest.mark.parametrize("X, cons, ml, cl", [
    # distances near 1e308 overflowed to inf and nan (two RuntimeWarnings, pairs lost)
    ([[1e308, 1e308], [-1e308, -1e308], [0, 0]], "DELTA 1e308\nGAMMA 1e200\n",
     [], [(0, 1), (0, 2), (1, 2)]),
    # DELTA ** 2 raised OverflowError
    ([[0.0], [1.0], [3.0]], "DELTA 1e200\n", [(0, 1), (0, 2), (1, 2)], []),
    ([[1e-320], [0.0], [3e-320]], "DELTA 2e-320\n", [(0, 1)], []),
    # the boundary stays strict: a pair at exactly DELTA or GAMMA is not added
    ([[0.0], [1.0], [3.0]], "DELTA 1\nGAMMA 2\n", [], [(0, 2)]),
])
def test_delta_gamma_at_the_ends_of_the_float_range(tmp_path, X, cons, ml, cl):
    (tmp_path / "c.txt").write_text(cons)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = read_constraints(tmp_path / "c.txt", X=np.array(X))
    assert out.ml == ml and out.cl == cl


@pytest.mark.parametrize("blob, words", [
    (b"x0,x1\n1,2\n", "not a .npy file"),  # np.load would try to unpickle it
    (SEEDS["blobs.npz"][:200], "not a readable .npz file: BadZipFile"),
    (SEEDS["blobs.npy"].replace(b"(75, 2)", b"(10000000000000, 2)"), "not a readable .npy"),
    (SEEDS["blobs.npy"].replace(b"'<f8'", b"'|O8'"), "not a readable .npy"),
    # numpy printed "RuntimeWarning: invalid value encountered in reduce" before its error
    (SEEDS["blobs.npy"].replace(b"(75, 2)", b"(9223372036854775808, 2)"), "not a readable .npy"),
], ids=["csv", "npz-cut", "npy-huge-shape", "npy-object", "npy-shape-overflows"])
def test_damaged_numpy_files_are_input_errors(tmp_path, blob, words):
    name = "d.npz" if blob.startswith(b"PK") else "d.npy"
    (tmp_path / name).write_bytes(blob)
    with _shown_warnings() as caught:
        with pytest.raises(InputError, match=re.escape(words)):
            read_data(tmp_path / name)
    assert not caught


def test_npz_content_named_npy_is_read_as_npz(tmp_path):
    (tmp_path / "d.npy").write_bytes(SEEDS["blobs.npz"])
    df = read_data(tmp_path / "d.npy")
    assert df.header == "npz" and df.k == 3 and df.X.shape == (75, 2)


@pytest.mark.parametrize("row, words", [
    ('{"elapsed": "abc"}', "run.jsonl:2: 'elapsed' must be a finite number or null, got 'abc'"),
    ('{"elapsed": 1, "gub": 1e400}', "run.jsonl:2: 'gub' must be a finite number or null"),
    ('{"elapsed": 1, "gap": NaN}', "run.jsonl:2: 'gap' must be a finite number or null"),
    ('{"elapsed": 1, "gap": [1]}', "run.jsonl:2: 'gap' must be a finite number or null"),
    ("[" * 100_000, "run.jsonl:2: invalid JSON: nested too deeply"),
], ids=lambda v: None if len(v) < 60 else f"{len(v)}-chars")
def test_bad_progress_rows_name_file_and_line(tmp_path, row, words):
    (tmp_path / "run.jsonl").write_text('{"elapsed": 0.5, "gub": 3.0}\n' + row + "\n")
    with pytest.raises(InputError, match=re.escape(words)):
        read_run(tmp_path / "run.jsonl")


@pytest.mark.parametrize("ext", ["png", "svg"])
def test_progress_values_matplotlib_cannot_lay_out(tmp_path, capfd, ext):
    rows = ('{"elapsed": 0.5, "gub": 1e308, "global_lb": -1e308, "gap": 1}\n'
            '{"elapsed": 1.7e308, "gub": 1e308, "global_lb": -1e308, "gap": 1e-300}\n')
    inputs = {"run.jsonl": rows.encode()}
    out = f"p.{ext}"
    # before: exit 2, but after RuntimeWarnings (six lines on stderr), blaming the output file
    assert run_cli(capfd, ["plot", "progress", "run.jsonl", "-o", out], inputs, [out]) == 2
    (tmp_path / "run.jsonl").write_bytes(inputs["run.jsonl"])
    with _shown_warnings() as caught:
        with pytest.raises(InputError, match="run.jsonl: cannot draw these values"):
            plot_progress(read_run(tmp_path / "run.jsonl"), tmp_path / out,
                          source=str(tmp_path / "run.jsonl"))
    assert not caught and not (tmp_path / out).exists()


def test_data_whose_sum_of_squares_overflows_is_an_input_error(capfd):
    # before: check went on with inf / nan after six RuntimeWarnings from centring the data
    data = SEEDS["blobs.txt"].replace(b"\n0.5183 ", b"\n1e308 ", 1)
    assert data != SEEDS["blobs.txt"]
    assert run_cli(capfd, ["check", "d.txt"], {"d.txt": data}) == 2
    with _case_dir({"d.txt": data}):
        capfd.readouterr()
        main(["check", "d.txt"])
        err = capfd.readouterr()[1]
    assert "d.txt: value 1e+308 at row 0, column 0 (0-based) is too large" in err
    fine = SEEDS["blobs.txt"].replace(b"\n0.5183 ", b"\n1e70 ", 1)
    assert run_cli(capfd, ["check", "d.txt"], {"d.txt": fine}) == 0
    # the SDP squares the sums of squares: 1e80 passed the old limit and ended in an
    # internal LinAlgError inside the safe bound
    assert run_cli(capfd, ["check", "d.txt"], {"d.txt": data.replace(b"1e308", b"1e80")}) == 2
    # the API refuses the same data with the same words, naming its argument
    import pcsos

    X = np.loadtxt(io.BytesIO(data), skiprows=1)
    with pytest.raises(pcsos.InputError) as api:
        pcsos.solve(X, 3)
    said = str(api.value)
    assert said.startswith("X: value 1e+308 at row 0, column 0 (0-based) is too large")
    assert "d.txt: " + said.removeprefix("X: ") in err


def test_data_just_below_the_magnitude_limit_solves_as_at_its_own_scale():
    # the limit is about the arithmetic, not a guess: blobs (n = 75, d = 2; the limit is
    # 5.4e74) scaled by 2^240 ~ 1.8e72 solves to the same clustering and value, scaled
    # (a power of two scales every rounding the same way)
    import pcsos

    X = np.loadtxt(io.BytesIO(SEEDS["blobs.txt"]), skiprows=1)
    base = pcsos.solve(X, 3, workers=1, seed=0)
    big = pcsos.solve(X * 2.0**240, 3, workers=1, seed=0)
    assert base.status == big.status == "optimal"
    assert big.objective / 2.0**480 == pytest.approx(base.objective, rel=1e-9)
    assert big.lower_bound <= big.objective


def test_cluster_plot_of_huge_data_is_an_input_error(capfd):
    data = b"3 3\n1e308 1e308 1\n-1e308 -1e308 2\n0 0 3\n"
    inputs = {"d.txt": data, "l.txt": b"0\n1\n1\n"}
    argv = ["plot", "clusters", "d.txt", "--labels", "l.txt", "-o", "c.png"]
    assert run_cli(capfd, argv, inputs, ["c.png"]) in (0, 2)


@pytest.mark.parametrize("text, words", [
    ('{"labels": ["a"], "objective": 1, "lower_bound": 0, "gap": 0, "status": "optimal", '
     '"message": ""}', "result:1: 'labels' must be null or a list of non-negative integers"),
    ('{"labels": [1.5], "objective": 1, "lower_bound": 0, "gap": 0, "status": "optimal", '
     '"message": ""}', "'labels' must be null or a list"),
    ('{"labels": null, "objective": "x", "lower_bound": 0, "gap": 0, "status": "optimal", '
     '"message": ""}', "result:1: 'objective' must be a number or null, got 'x'"),
    ('{"labels": null, "objective": 1, "lower_bound": 0, "gap": 0, "status": [], '
     '"message": ""}', "'status' must be a string"),
    ('{"labels": null, "objective": 1, "lower_bound": 0, "gap": 0, "status": "x", '
     '"message": "", "nodes": -1}', "'nodes' must be a non-negative integer"),
    ('{"labels": null, "objective": 1, "lower_bound": 0, "gap": 0, "status": "x", '
     '"message": "", "infeasible_pairs": [1]}', "'infeasible_pairs' must be a list of"),
    ('{"labels": null, "objective": 1, "lower_bound": 0, "gap": 0, "status": "x", '
     '"message": "", "log": {}}', "'log' must be a list of objects"),
    ('{"labels": ' + "[" * 100_000, "result: invalid JSON: nested too deeply"),
    ('{"labels": [' + "9" * 5000 + "]}",
     "result: invalid JSON: an integer of more than 4300 digits"),
], ids=lambda v: None if len(v) < 60 else f"{len(v)}-chars")
def test_result_from_json_rejects_wrong_types(text, words):
    with pytest.raises(InputError, match=re.escape(words)):
        Result.from_json(text)


def test_result_from_json_names_the_file_and_line(tmp_path):
    text = SEEDS["result.json"].decode().replace('"objective": 106.69790806879999',
                                                 '"objective": "106.7"')
    (tmp_path / "r.json").write_text(text.replace(", ", ",\n"))
    with pytest.raises(InputError, match=r"r.json:\d+: 'objective' must be a number or null"):
        Result.from_json(tmp_path / "r.json")
    with pytest.raises(InputError, match="NUL"):
        Result.from_json("r\x00.json")


def test_no_reader_can_unpickle_or_evaluate():
    """Reading a file never runs code: no pickle, eval or exec in the readers, and np.load
    only with allow_pickle=False."""
    for mod in ("io.py", "plot.py", "cli/plot.py", "cli/check.py", "cli/common.py"):
        src = (ROOT / "pcsos" / mod).read_text()
        assert not re.search(r"\bpickle\b|\beval\(|\bexec\(|allow_pickle=True", src), mod
        for call in re.findall(r"np\.load\([^)]*\)", src):
            assert "allow_pickle=False" in call, (mod, call)


def test_an_integer_past_the_double_range_is_an_input_error(tmp_path):
    # a JSON integer of 400 digits is valid JSON; float() of it was an internal OverflowError
    from pcsos.api import Result
    from pcsos.plot import read_run

    big = "1" + "0" * 400
    run = tmp_path / "r.jsonl"
    run.write_text(f'{{"elapsed": {big}, "gub": 1, "global_lb": 0, "gap": 1}}\n')
    with pytest.raises(InputError, match="r.jsonl:1: 'elapsed' must be a finite number"):
        read_run(run)
    res = tmp_path / "r.json"
    res.write_text(f'{{"labels": null, "objective": {big}, "lower_bound": 0, "gap": 0, '
                   '"status": "optimal", "message": ""}')
    with pytest.raises(InputError, match="r.json:1: 'objective' must be a number or null"):
        Result.from_json(res)
