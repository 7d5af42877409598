"""Readers and writers for the file formats of PC-SOS-SDP, S-MDEClust/PCCC and numpy.

Every reader returns a plain dataclass and raises :class:`~pcsos.errors.InputError` naming
the file and the 1-based line of the first bad line. Nothing is changed silently: whenever a
reader has to choose (a header that disagrees with the rows, soft pairs it cannot use, keys
it does not know), it says what it used in the ``notes`` of its result. Data are never
rescaled. Text files are all read by one function (UTF-8, a leading BOM ignored), and a
message quotes at most about 80 characters of a line or token (:func:`_quote`).

Formats (see ``docs/formats.md``):

- data, pc-sos-sdp text: first line ``n d`` or ``n d k``, then rows of d numbers;
- data, CSV (S-MDEClust / PCCC): header ``x0,...,x{d-1},class``, the class column holding
  the true labels (optional);
- data, numpy: ``.npy`` (the n x d matrix) or ``.npz`` (``X`` and optionally ``y``);
- constraints, pc-sos-sdp text: ``ML i j``, ``CL i j``, ``DELTA d``, ``GAMMA g``;
- constraints, JSON (PCCC): ``{"ml": [[i, j], ...], "cl": [...], "sml": [], ...}``;
- results: the pc-sos-sdp n x k 0/1 assignment matrix and a one-label-per-line file;
- point weights: one positive number a line.
"""

from __future__ import annotations

import csv
import dataclasses
import io as _io
import json
import math
import numbers
import os
import pathlib
import signal
import stat
import sys
import threading
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pcsos.errors import InfeasibleError, InputError, PcsosError

__all__ = [
    "DataFile",
    "Constraints",
    "read_data",
    "read_constraints",
    "write_result_matrix",
    "read_result_matrix",
    "write_labels",
    "read_labels",
    "read_weights",
    "jsonable",
    "write_json",
]

#: names accepted for the true-label column of a CSV file (compared case-insensitively)
CLASS_COLUMNS = ("class", "label", "labels", "y", "target")
#: PCCC keys for soft pairs: accepted, reported as unsupported when non-empty
SOFT_KEYS = ("sml", "scl", "sml_proba", "scl_proba")


@dataclass
class DataFile:
    """Data read from a file.

    ``header`` says which layout was seen: ``'n d'`` or ``'n d k'`` (pc-sos-sdp text),
    ``'csv'``, ``'csv (no header)'``, ``'npy'`` or ``'npz'``. ``k`` is the header's k (or
    None); ``classes`` the true labels of a CSV class column or an npz ``y`` (or None).
    """

    X: np.ndarray
    header: str
    k: int | None = None
    classes: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)
    source: str = ""

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])


@dataclass
class Constraints:
    """Pairs read from a constraint file, as given (0-based, not deduplicated).

    ``ml`` and ``cl`` include the pairs that ``DELTA``/``GAMMA`` lines expanded into
    (``n_delta`` and ``n_gamma`` of them, listed after the explicit pairs).
    """

    ml: list[tuple[int, int]] = field(default_factory=list)
    cl: list[tuple[int, int]] = field(default_factory=list)
    delta: float | None = None
    gamma: float | None = None
    n_delta: int = 0
    n_gamma: int = 0
    format: str = "text"
    notes: list[str] = field(default_factory=list)
    source: str = ""


#: the largest index or label a reader accepts: every integer array of pcsos is int64, and a
#: larger value would end in an OverflowError far from the file that held it
INT_MAX = int(np.iinfo(np.int64).max)

#: at most this many characters of a line or token are quoted in an error message, so that a
#: 50 MB line or a row of 10**6 columns is not echoed whole to the terminal
QUOTE_MAX = 80


# --------------------------------------------------------------------------- helpers
#: how often (seconds) a wait for a FIFO's or a terminal's data looks for a pending signal
WAIT_STEP = 0.05

#: the name of standard input: a file named ``-`` is read from stdin (one per command), as
#: ``-`` names stdout for the outputs
STDIN = "-"


def open_input(path, *, binary: bool = False):
    """``path`` opened for reading: UTF-8 text, or bytes with ``binary``; raises what
    ``open()`` raises. Every file pcsos reads is opened here.

    ``path`` :data:`STDIN` (``-``) is standard input. A regular file is opened directly.
    Anything else (standard input, a FIFO, a terminal) is opened and read whole in a helper
    thread while the calling thread waits in steps of
    :data:`WAIT_STEP`, and comes back as an in-memory file. Such a file can block in
    ``open()`` or ``read()`` until its writer comes. CPython runs a Python signal handler only
    between bytecodes, so a Ctrl-C that lands between its last check and that blocking call
    would be seen only once the call returns, which may be never. A wait in steps sees it
    within one step: a handler that raises (KeyboardInterrupt) ends the wait, and the helper
    stays blocked, holding its own handle of the file, until a writer comes or the process
    ends (a later read of the same FIFO in that process may then lose data to it).
    """
    path = os.fspath(path)
    try:
        regular = path != STDIN and stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):  # missing, a NUL in the name, ...: open() says which
        regular = True
    if regular:
        return open(path, "rb") if binary else open(path, encoding="utf-8")
    data = _in_helper_thread(lambda: _read_all(path))
    buf = _io.BytesIO(data)
    return buf if binary else _io.TextIOWrapper(buf, encoding="utf-8")


def _read_all(path: str) -> bytes:
    if (threading.current_thread() is not threading.main_thread()
            and hasattr(signal, "pthread_sigmask")):
        # the caller's thread takes the signals (and the kernel prefers it anyway)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    # standard input through a handle of its own: blocked in sys.stdin's buffer, this thread
    # held its lock, and the interpreter's exit (after Ctrl-C) aborted on it; a closed stdin
    # is then an OSError (EBADF) like any unreadable file
    with (open(os.dup(0), "rb") if path == STDIN else open(path, "rb")) as fh:
        return fh.read()


def _in_helper_thread(fn):
    """``fn()`` run in a daemon thread, its result or its exception; the caller waits in
    steps, so that a signal handler of its thread runs meanwhile (and may raise, leaving the
    helper blocked until its file gets a writer or the process ends)."""
    box: dict = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller as is
            box["error"] = exc

    helper = threading.Thread(target=target, name="pcsos-read", daemon=True)
    helper.start()
    while helper.is_alive():
        helper.join(WAIT_STEP)
    if "error" in box:
        raise box["error"]
    return box["value"]


@contextmanager
def _input_errors(path: str):
    """The failures of opening or reading the input ``path`` (OSError, a decoding error, a
    NUL in the name) as an :class:`InputError` naming the file; one wording for every
    reader."""
    try:
        yield
    except FileNotFoundError:
        raise InputError("no such file", source=path) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", source=path) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not a text file ({exc.reason} at byte {exc.start})",
                         source=path) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=path) from None
    except ValueError:  # open() refuses a path holding a NUL character
        raise InputError("not a valid file name (it holds a NUL character)",
                         source=repr(path)) from None


def _read_text(path) -> str:
    """The whole file as text. Every text format is read through here, so that they all agree
    on encoding, BOM and decoding errors."""
    path = os.fspath(path)
    with _input_errors(path), open_input(path) as fh:
        text = fh.read()
    # Windows editors and Excel start UTF-8 files with a BOM; left in, it glues onto the first
    # token ('\ufeff3', '\ufeffML'). Stripped here rather than by encoding="utf-8-sig", which
    # would shift the byte offset reported for a decoding error by the BOM's 3 bytes.
    return text.removeprefix("\ufeff")


def _lines(text: str) -> list[str]:
    """The file's lines as an editor numbers them: ``open`` has turned CRLF and CR into LF,
    and only LF ends a line. ``str.splitlines`` also breaks at form feed, \\x1c-\\x1e, NEL
    and U+2028, which made one row two points and every later line number wrong; inside
    a line ``split()`` still takes them as spaces."""
    return text.split("\n")


def _quote(text: str, *, quote: bool = True) -> str:
    """User text for an error message: ``repr(text)`` (or the text as is, ``quote=False``),
    cut to about QUOTE_MAX characters and then ``... (N characters)``."""
    show = repr if quote else str
    width = QUOTE_MAX + (2 if quote else 0)  # the quotes do not count
    # len(text) first: repr() of a 50 MB line would copy it just to throw it away
    if len(text) <= QUOTE_MAX and len(show(text)) <= width:
        return show(text)
    cut = text[:QUOTE_MAX - 3]
    while len(show(cut)) > width - 3:  # repr escapes ('\x00') make a character wider
        cut = cut[:-1]
    return f"{show(cut)}... ({len(text)} characters)"


def json_number(v) -> float | None:
    """A JSON value as a float when it is a number in the double range (an int of 400
    digits is JSON, and float() of it an OverflowError), else None; never a bool."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
        return None
    try:
        return float(v)
    except OverflowError:
        return None


class _DuplicateKey(Exception):
    pass


def _unique_keys(pairs: list) -> dict:
    out = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _load_json(text: str, source: str, line: int | None = None):
    """``json.loads`` with every way it can fail on bad input turned into an InputError.

    ``line``: the file's line when ``text`` is one line of it (JSONL). Besides the decoder's
    own errors, ``[[[[...`` nested some thousands deep exhausts the recursion limit and an
    integer of more than 4300 digits is a plain ValueError (Python's int conversion limit).
    A key twice in one object is an error: ``json.loads`` keeps the last value, and
    ``{"ml": [[0, 1]], "ml": [[2, 3]]}`` lost a pair without a word.
    """
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        raise InputError(f"invalid JSON: the key {_quote(str(exc))} appears twice in one "
                         "object", source=source, line=line) from None
    except json.JSONDecodeError as exc:
        where = exc.lineno if line is None else line
        raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", source=source,
                         line=where) from None
    except RecursionError:
        raise InputError("invalid JSON: nested too deeply", source=source, line=line) from None
    except ValueError as exc:
        why = str(exc)
        if "integer string conversion" in why:  # Python's message names no JSON
            why = f"an integer of more than {sys.get_int_max_str_digits()} digits"
        raise InputError(f"invalid JSON: {_quote(why, quote=False)}", source=source,
                         line=line) from None


def _plain(token: str) -> bool:
    """Written as a number is in a file: ASCII, no '_'. Python's int and float also take
    '1_0' (10), Arabic-Indic and full-width digits, so 'ML 0 1_0' named point 10."""
    return token.isascii() and "_" not in token


def _parse_int(token: str) -> int | None:
    """An integer token (``'3'``, ``'-1'``), else None; ``'3.0'`` is not an integer."""
    if not _plain(token):
        return None
    try:
        return int(token)
    except ValueError:
        return None


def _float_token(token: str, source: str, lineno: int, column: int) -> float:
    try:
        if not _plain(token):
            raise ValueError(token)
        v = float(token)
    except ValueError:
        raise InputError(f"non-numeric value {_quote(token)} in column {column}",
                         source=source, line=lineno) from None
    if not math.isfinite(v):
        raise InputError(f"non-finite value {_quote(token)} in column {column}",
                         source=source, line=lineno)
    return v


def _rows_to_matrix(rows: list[tuple[int, list[str]]], source: str, text: str
                    ) -> np.ndarray:
    """Convert token rows (already checked for equal length) to float64, naming a bad line;
    ``text``, the file's, says at C speed whether a token may be one that numpy would read
    but a file should not hold ('1_0', '٣')."""
    if not rows:
        return np.empty((0, 0))
    try:
        X = np.array([r for _, r in rows], dtype=np.float64)
    except ValueError:
        X = None
    if X is None or not np.isfinite(X).all() or not _plain(text):
        # slow path only to find and name the first bad token (the text's '_' or non-ASCII
        # character may lie outside the rows, e.g. in a CSV header)
        for lineno, toks in rows:
            for c, tok in enumerate(toks, start=1):
                _float_token(tok, source, lineno, c)
        if X is None or not np.isfinite(X).all():  # pragma: no cover
            raise AssertionError("a bad token must have been found")
    return X


# --------------------------------------------------------------------------- data
def read_data(path) -> DataFile:
    """Read a data file: pc-sos-sdp text, CSV (``.csv``) or numpy (``.npy``/``.npz``).

    The format is chosen by the extension; a text file whose first line contains a comma is
    read as CSV. Raises :class:`InputError` (file and line) for a bad header, a ragged or
    malformed row and non-finite values.
    """
    source = os.fspath(path)
    ext = os.path.splitext(source)[1].lower()
    if ext in (".npy", ".npz"):
        return _read_numpy(source, ext)
    text = _read_text(source)
    first = next((ln for ln in _lines(text) if ln.strip()), "")
    if ext == ".csv" or "," in first:
        return _read_csv(source, text)
    return _read_pcsos_data(source, text)


def _read_pcsos_data(source: str, text: str) -> DataFile:
    lines = _lines(text)
    notes: list[str] = []
    hline = next((t for t, ln in enumerate(lines) if ln.strip()), None)
    if hline is None:
        raise InputError("empty data file (expected a header 'n d' or 'n d k')", source=source)
    htoks = lines[hline].split()
    hvals = [_parse_int(t) for t in htoks]
    if len(htoks) not in (2, 3) or any(v is None for v in hvals):
        raise InputError(f"bad header {_quote(lines[hline].strip())}: the first line must be "
                         "two or three integers 'n d' or 'n d k'", source=source, line=hline + 1)
    if any(v < 0 for v in hvals):
        raise InputError(f"bad header {_quote(lines[hline].strip())}: negative value",
                         source=source, line=hline + 1)
    hn, hd = hvals[0], hvals[1]
    hk = hvals[2] if len(hvals) == 3 else None
    header = "n d k" if hk is not None else "n d"
    notes.append(f"header {header!r} seen: " + " ".join(htoks))
    if hk == 0:
        notes.append("header k = 0 ignored")
        hk = None

    rows: list[tuple[int, list[str]]] = []
    width = None
    for t in range(hline + 1, len(lines)):
        toks = lines[t].split()
        if not toks:
            continue
        if width is None:
            width = len(toks)
        elif len(toks) != width:
            first = rows[0][0]
            if len(toks) == hd != width:  # the first row is the odd one ('0 0 # a note')
                raise InputError(f"ragged row: {width} values, but the header says d = {hd} "
                                 f"(line {t + 1} has {hd})", source=source, line=first)
            raise InputError(f"ragged row: {len(toks)} values, but the first data row "
                             f"(line {first}) has {width}", source=source, line=t + 1)
        rows.append((t + 1, toks))
    if not rows:
        raise InputError("no data rows after the header", source=source, line=hline + 1)
    X = _rows_to_matrix(rows, source, text)
    n, d = X.shape
    if (hn, hd) != (n, d):
        # a file without a header whose first row is integers reads as one: taking the rows
        # would drop that point and shift every pair index after it, so neither reading is
        # taken for the user
        said = ", ".join([f"n = {hn}"] * (hn != n) + [f"d = {hd}"] * (hd != d))
        fix = (f"; if it is a point, the file has no header: add one above it, '{n + 1} {d}' "
               f"({n + 1} points of {d} values)" if len(htoks) == d and hn != n else "")
        raise InputError(f"the header {_quote(lines[hline].strip())} says {said}, but the "
                         f"file has {n} data rows of {d} values: give the header the rows' "
                         f"count and width{fix}", source=source, line=hline + 1)
    return DataFile(X, header, hk, None, notes, source)


def _read_csv(source: str, text: str) -> DataFile:
    reader = csv.reader(_io.StringIO(text))
    try:
        # a blank line (no field, or one blank field) is skipped; a row of empty fields
        # (',,') is a row, whose empty values are errors, not a line to drop silently
        # each row's line as an editor counts it (the reader's line_num: a quoted field
        # may span lines, which made the record's number and the line's differ)
        lines = [(reader.line_num, [c.strip() for c in row]) for row in reader
                 if len(row) > 1 or (row and row[0].strip())]
    except csv.Error as exc:
        # e.g. a field over the csv module's 131072-character limit: bad input, not a crash
        raise InputError(f"not readable as CSV: {exc}", source=source,
                         line=reader.line_num) from None
    notes: list[str] = []
    # rows of empty fields after the last data row (a spreadsheet's export leaves them)
    # shift no index: dropped, with a note; between data rows they stay errors
    tail = 0
    while lines and not any(lines[-1][1]):
        lines.pop()
        tail += 1
    if tail:
        notes.append(f"{tail} row(s) of empty fields after the last data row ignored")
    if not lines:
        raise InputError("empty CSV file", source=source)
    lineno0, first = lines[0]
    has_header = any(_is_not_number(c) for c in first)
    if has_header:
        names = first
        body = lines[1:]
        header = "csv"
    else:
        names = [f"x{c}" for c in range(len(first))]
        body = lines
        header = "csv (no header)"
        notes.append("CSV without a header row: every column is a feature")
    width = len(names)
    for lineno, row in body:
        if len(row) != width:
            raise InputError(f"ragged row: {len(row)} values, but the header (line {lineno0}) "
                             f"has {width} columns", source=source, line=lineno)
    if not body:
        raise InputError("no data rows after the CSV header", source=source, line=lineno0)
    class_col = width - 1 if has_header and names[-1].lower() in CLASS_COLUMNS else None
    classes = None
    k = None
    if class_col is not None:
        labels = []
        for lineno, row in body:
            v = _parse_int(row[class_col])
            if v is None:
                fv = _float_token(row[class_col], source, lineno, class_col + 1)
                if not fv.is_integer():
                    raise InputError(f"class label {_quote(row[class_col])} is not an integer",
                                     source=source, line=lineno)
                v = int(fv)
            if v < 0:
                raise InputError(f"class label {v} is negative", source=source, line=lineno)
            if v > INT_MAX:
                raise InputError(f"class label {_quote(row[class_col])} is too large",
                                 source=source, line=lineno)
            labels.append(v)
        classes = np.asarray(labels, dtype=np.int64)
        k = int(classes.max()) + 1
        notes.append(f"CSV column {names[class_col]!r} read as true labels "
                     f"({len(np.unique(classes))} distinct, max + 1 = {k}); not used as a "
                     "feature")
        feat = [(lineno, row[:class_col]) for lineno, row in body]
    else:
        feat = body
        if has_header:
            notes.append(f"CSV last column {_quote(names[-1])} is not a class column: every "
                         "column is a feature")
    if feat and not feat[0][1]:
        raise InputError("CSV has no feature columns", source=source, line=lineno0)
    X = _rows_to_matrix(feat, source, text)
    return DataFile(X, header, k, classes, notes, source)


def _is_not_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return True
    return False


#: the first bytes of a .npy file and of a zip archive (.npz)
NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = b"PK\x03\x04"


def _read_numpy(source: str, ext: str) -> DataFile:
    with _input_errors(source):
        fh = open_input(source, binary=True)
    with fh:
        with _input_errors(source):
            magic = fh.read(6)
        return _numpy_data(fh, magic, source, ext)


def _numpy_data(fh, magic: bytes, source: str, ext: str) -> DataFile:
    # np.load falls back to unpickling anything that is neither; allow_pickle=False refuses
    # that, but with a message about pickles that would puzzle the owner of a renamed CSV
    if not (magic.startswith(NPY_MAGIC) or magic.startswith(ZIP_MAGIC)):
        raise InputError(f"not a {ext} file (it starts with neither the .npy magic bytes nor "
                         "a zip header)", source=source)
    try:
        # numpy warns on its way to some errors (a shape whose product overflows int64 gives
        # "invalid value encountered in reduce" before the ValueError): the error says it all
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            X, classes, notes, kind = _load_numpy(fh, source)
    except PcsosError:
        raise
    except MemoryError:
        # a corrupted header may claim a shape of 10**12 elements, allocated before reading
        raise InputError(f"not a readable {ext} file: its header claims an array too large "
                         "for memory", source=source) from None
    except Exception as exc:  # noqa: BLE001 - numpy, zipfile and zlib raise many kinds
        # (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error, KeyError, ...) for a
        # damaged file; none of them is a bug of pcsos, each is a bad input
        why = f"{type(exc).__name__}: {exc}"
        raise InputError(f"not a readable {ext} file: {_quote(why, quote=False)}",
                         source=source) from None
    if X.ndim == 1:
        X = X[:, None]
        notes.append("1-D array read as n x 1 data")
    if X.ndim != 2 or not np.issubdtype(X.dtype, np.number) or np.iscomplexobj(X):
        raise InputError(f"expected a real n x d array, got shape {X.shape} dtype {X.dtype}",
                         source=source)
    if X.size == 0:  # else reported later as 'k exceeds n = 0'
        raise InputError(f"no data: the array has shape {X.shape}", source=source)
    X = X.astype(np.float64)
    bad = ~np.isfinite(X)
    if bad.any():
        r, c = map(int, np.argwhere(bad)[0])
        raise InputError(f"non-finite value {X[r, c]} at row {r} column {c}", source=source)
    if classes is not None and len(classes) != len(X):
        raise InputError(f"{len(classes)} labels for {len(X)} rows", source=source)
    k = int(classes.max()) + 1 if classes is not None and len(classes) else None
    return DataFile(X, kind, k, classes, notes, source)


def _load_numpy(fh, source: str) -> tuple[np.ndarray, np.ndarray | None, list[str], str]:
    """The array, an npz's labels, the notes and the layout seen ('npy' or 'npz') of a numpy
    file (``fh``: from :func:`open_input`, read from its start); never unpickles."""
    notes: list[str] = []
    fh.seek(0)
    obj = np.load(fh, allow_pickle=False)
    if isinstance(obj, np.ndarray):
        return obj, None, notes, "npy"
    with obj:  # an NpzFile: decided by the content (zip or not), not by the extension
        keys = list(obj.files)
        xkey = next((key for key in ("X", "x", "data") if key in keys), None)
        if xkey is None:
            if len(keys) != 1:
                raise InputError("npz file needs an array 'X' (found "
                                 f"{_quote(str(keys), quote=False)})", source=source)
            xkey = keys[0]
        ykey = next((key for key in ("y", "labels", "classes") if key in keys), None)
        X = np.asarray(obj[xkey])
        classes = None
        if ykey is not None:
            y = np.asarray(obj[ykey])
            if y.ndim != 1 or not np.issubdtype(y.dtype, np.integer) or (y < 0).any():
                raise InputError(f"npz array {ykey!r} must be non-negative integer labels",
                                 source=source)
            if y.size and np.issubdtype(y.dtype, np.unsignedinteger) and y.max() > INT_MAX:
                raise InputError(f"npz array {ykey!r} holds a label too large",
                                 source=source)
            classes = y.astype(np.int64)
            notes.append(f"npz array {ykey!r} read as true labels")
        other = [key for key in keys if key not in (xkey, ykey)]
        if other:
            notes.append("npz arrays ignored: "
                         + ", ".join(_quote(name, quote=False) for name in other))
    return X, classes, notes, "npz"


# --------------------------------------------------------------------------- constraints
def read_constraints(path, n: int | None = None, X: np.ndarray | None = None) -> Constraints:
    """Read a constraint file: pc-sos-sdp text, or PCCC JSON (``.json`` or a leading ``{``).

    ``n`` (when given) bounds the indices; ``X`` is needed to expand ``DELTA``/``GAMMA``.
    Raises :class:`InputError` naming file, line and the line text for an unknown token,
    wrong arity, a non-integer or out-of-range index and a self pair, and
    :class:`InfeasibleError` (reason ``'delta_gamma'``) when DELTA > GAMMA and some pair's
    distance lies in (GAMMA, DELTA), so that it would be both must-link and cannot-link.
    """
    source = os.fspath(path)
    text = _read_text(source)
    if X is not None and n is None:
        n = int(np.asarray(X).shape[0])
    if os.path.splitext(source)[1].lower() == ".json" or text.lstrip().startswith("{"):
        return _read_json_constraints(source, text, n)
    return _read_text_constraints(source, text, n, X)


def _read_text_constraints(source: str, text: str, n: int | None, X) -> Constraints:
    out = Constraints(format="text", source=source)
    delta_line = gamma_line = None
    hi = n if n is not None else INT_MAX + 1
    rng = f"0..{hi - 1}"
    for t, raw in enumerate(_lines(text)):
        lineno = t + 1
        toks = raw.split()
        if not toks:
            continue
        kind = toks[0].upper()
        problem = None
        if kind in ("ML", "CL"):
            ij = [_parse_int(x) for x in toks[1:]] if len(toks) == 3 else None
            if ij is None:
                problem = f"{kind} needs two indices, got {len(toks) - 1}"
            elif None in ij:
                problem = "indices must be integers"
            elif min(ij) < 0 or max(ij) >= hi:
                problem = f"index out of range {rng}"
            elif ij[0] == ij[1]:
                problem = "self pair"
            else:
                (out.ml if kind == "ML" else out.cl).append((ij[0], ij[1]))
        elif kind in ("DELTA", "GAMMA"):
            v = _float_token(toks[1], source, lineno, 2) if len(toks) == 2 else None
            prev = delta_line if kind == "DELTA" else gamma_line
            if v is None:
                problem = f"{kind} needs one number, got {len(toks) - 1}"
            elif v < 0:
                problem = f"{kind} must be >= 0"
            elif prev is not None:
                problem = f"{kind} given twice (first on line {prev})"
            elif kind == "DELTA":
                out.delta, delta_line = v, lineno
            else:
                out.gamma, gamma_line = v, lineno
        else:
            problem = (f"unknown constraint type {_quote(toks[0])} (expected ML, CL, DELTA or "
                       "GAMMA)")
        if problem is not None:
            # one raise, so every message ends with the offending line, cut by _quote
            raise InputError(f"{problem}: {_quote(raw.strip())}", source=source, line=lineno)
    if not out.ml and not out.cl and out.delta is None and out.gamma is None:
        out.notes.append("no constraints in the file: the unconstrained problem")
    if out.delta is not None or out.gamma is not None:
        line = delta_line if out.delta is not None else gamma_line
        if X is None:
            raise InputError("DELTA/GAMMA need the data to expand into pairs", source=source,
                             line=line)
        _expand_delta_gamma(out, np.asarray(X, dtype=np.float64), delta_line, gamma_line)
    return out


def _expand_delta_gamma(out: Constraints, X: np.ndarray, delta_line, gamma_line) -> None:
    """Turn DELTA (pairs closer than d -> ML) and GAMMA (pairs farther than g -> CL) into pairs."""
    # squared distances by the Gram identity; compared against squared thresholds. Fine for
    # the n of an exact solver (n <= a few thousand). Squares of data near 1e308 overflow and
    # those of 1e-320 vanish, so everything is first divided by a power of two near the
    # largest |x|: exact in binary floating point, so no comparison changes for ordinary data.
    top = float(np.max(np.abs(X))) if X.size else 0.0
    # 2**(e - 1) <= top < 2**e; 2**e itself overflows when top is near the largest double
    scale = math.ldexp(1.0, math.frexp(top)[1] - 1) if top > 0 else 1.0
    X = X / scale
    sq = np.einsum("ij,ij->i", X, X)
    D2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * (X @ X.T), 0.0)
    iu, ju = np.triu_indices(len(X), k=1)
    d2 = D2[iu, ju]
    with np.errstate(over="ignore", under="ignore"):  # inf / 0 compare as they should
        delta2 = (np.float64(out.delta) / scale) ** 2 if out.delta is not None else None
        gamma2 = (np.float64(out.gamma) / scale) ** 2 if out.gamma is not None else None
    if out.delta is not None:
        sel = d2 < delta2
        out.ml.extend(zip(iu[sel].tolist(), ju[sel].tolist()))
        out.n_delta = int(sel.sum())
        out.notes.append(f"DELTA {out.delta:g} (line {delta_line}) added {out.n_delta} "
                         "must-link pairs (every pair closer than DELTA)")
    if out.gamma is not None:
        sel = d2 > gamma2
        out.cl.extend(zip(iu[sel].tolist(), ju[sel].tolist()))
        out.n_gamma = int(sel.sum())
        out.notes.append(f"GAMMA {out.gamma:g} (line {gamma_line}) added {out.n_gamma} "
                         "cannot-link pairs (every pair farther than GAMMA)")
    if out.delta is not None and out.gamma is not None and out.delta > out.gamma:
        both = (d2 < delta2) & (d2 > gamma2)
        if both.any():
            t = int(np.argmax(both))
            i, j = int(iu[t]), int(ju[t])
            raise InfeasibleError(
                f"{out.source}: DELTA {out.delta:g} (line {delta_line}) > GAMMA {out.gamma:g} "
                f"(line {gamma_line}): {int(both.sum())} pairs, e.g. ({i}, {j}) at distance "
                f"{math.sqrt(d2[t]) * scale:.6g}, are both must-link and cannot-link",
                reason="delta_gamma", pairs=[(i, j)])
        out.notes.append(f"DELTA {out.delta:g} > GAMMA {out.gamma:g}, but no pair lies at a "
                         "distance between them: no conflict")


def _read_json_constraints(source: str, text: str, n: int | None) -> Constraints:
    out = Constraints(format="json", source=source)
    obj = _load_json(text, source) if text.strip() else {}
    if not isinstance(obj, dict):
        raise InputError("the JSON top level must be an object with keys 'ml' and 'cl'",
                         source=source, line=1)
    hi = n if n is not None else INT_MAX + 1
    rng = f"0..{hi - 1}"
    for key in ("ml", "cl"):
        pairs = obj.get(key, [])
        line = _json_line(text, key)
        if not isinstance(pairs, list):
            raise InputError(f"{key!r} must be a list of [i, j] pairs", source=source, line=line)
        for t, p in enumerate(pairs):
            problem = None
            if not (isinstance(p, (list, tuple)) and len(p) == 2):
                problem = "a pair needs two indices"
            elif not all(isinstance(v, int) and not isinstance(v, bool) for v in p):
                problem = "indices must be integers"
            elif min(p) < 0 or max(p) >= hi:
                problem = f"index out of range {rng}"
            elif p[0] == p[1]:
                problem = "self pair"
            if problem is not None:
                # dumped only on error: one bad element may be a list of 10**6 numbers
                where = f"{key}[{t}] = {_quote(json.dumps(p), quote=False)}"
                raise InputError(f"{where}: {problem}", source=source, line=line)
            i, j = p
            (out.ml if key == "ml" else out.cl).append((i, j))
    for key in SOFT_KEYS:
        val = obj.get(key)
        if val:
            cnt = len(val) if isinstance(val, list) else 1
            out.notes.append(f"{key!r}: {cnt} soft-constraint entries are not supported by "
                             "pcsos and were NOT used")
    unknown = [key for key in obj if key not in ("ml", "cl", *SOFT_KEYS)]
    if unknown:
        out.notes.append(f"unknown JSON keys ignored: {', '.join(map(_quote, unknown))}")
    if not out.ml and not out.cl:
        out.notes.append("no ml/cl pairs in the file: the unconstrained problem")
    return out


def _json_line(text: str, key: str) -> int | None:
    """1-based line of the first occurrence of ``"key"`` (JSON pairs carry no line of their own)."""
    pos = text.find(f'"{key}"')
    return text.count("\n", 0, pos) + 1 if pos >= 0 else None


# --------------------------------------------------------------------------- results
def cannot_write(exc: OSError, where: str) -> InputError:
    """The error of an output that could not be written (a full disk, /dev/full, a
    directory), naming it; every writer of pcsos raises this one."""
    return InputError(f"cannot write: {exc.strerror or exc}", source=where)


@contextmanager
def writing(path):
    """A text file to write (``'-'``: stdout, flushed at the end); an OSError while opening,
    writing or closing it (a full disk, /dev/full, a directory) is an InputError naming
    ``path``, as every pcsos output's is. A regular file is written beside itself and
    renamed over the old one once whole, so that a write that fails midway leaves the old
    file as it was, not cut short; a device or a pipe (/dev/null, a fifo) is written in
    place, as is a file whose folder does not let pcsos create one."""
    where = os.fspath(path)
    tmp = None
    try:
        if where == "-":
            yield sys.stdout
            sys.stdout.flush()
            return
        real = os.path.realpath(where)
        if not os.path.exists(real) or os.path.isfile(real):
            tmp = os.path.join(os.path.dirname(real),
                               f".{os.path.basename(real)}.{os.getpid()}.{id(path):x}.tmp")
            try:
                # mode 0o666 less the umask, as open(where, "w") would give a new file
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            except OSError:
                tmp = None  # a folder that refuses new files: in place, as before
        if tmp is None:
            with open(where, "w", encoding="utf-8") as fh:
                yield fh
            return
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            yield fh
        if os.path.exists(real):
            os.chmod(tmp, os.stat(real).st_mode & 0o7777)  # the old file's permissions
        os.replace(tmp, real)
        tmp = None
    except OSError as exc:
        raise cannot_write(exc, where) from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _check_labels(labels, k: int | None = None) -> np.ndarray:
    lab = np.asarray(labels)
    if lab.ndim != 1 or (lab.size and not np.issubdtype(lab.dtype, np.integer)):
        raise InputError(f"labels must be a 1-D integer array, got {lab.dtype} {lab.shape}")
    lab = lab.astype(np.int64)
    if lab.size and lab.min() < 0:
        raise InputError("labels must be non-negative")
    if k is not None and lab.size and lab.max() >= k:
        raise InputError(f"label {int(lab.max())} out of range 0..{k - 1}")
    return lab


def write_result_matrix(path, labels, k: int) -> None:
    """Write the pc-sos-sdp result: n rows of k space-separated 0/1 entries (``'-'`` = stdout)."""
    lab = _check_labels(labels, k)
    M = np.zeros((len(lab), int(k)), dtype=np.int64)
    M[np.arange(len(lab)), lab] = 1
    with writing(path) as fh:
        for row in M:
            fh.write(" ".join(map(str, row)) + "\n")


def read_result_matrix(path) -> np.ndarray:
    """Read an n x k 0/1 assignment matrix; returns the labels (one 1 per row is required)."""
    source = os.fspath(path)
    labels = []
    width = None
    for t, raw in enumerate(_lines(_read_text(source))):
        toks = raw.split()
        if not toks:
            continue
        if width is None:
            width = len(toks)
        elif len(toks) != width:
            raise InputError(f"ragged row: {len(toks)} entries, expected {width}",
                             source=source, line=t + 1)
        if any(x not in ("0", "1") for x in toks) or toks.count("1") != 1:
            raise InputError(f"a row must hold one 1 and otherwise 0: {_quote(raw.strip())}",
                             source=source, line=t + 1)
        labels.append(toks.index("1"))
    return np.asarray(labels, dtype=np.int64)


def write_labels(path, labels) -> None:
    """Write one integer label per line (``'-'`` = stdout)."""
    lab = _check_labels(labels)
    with writing(path) as fh:
        fh.write("".join(f"{v}\n" for v in lab.tolist()))


def read_labels(path) -> np.ndarray:
    """Read one integer label per line (blank lines skipped)."""
    source = os.fspath(path)
    out = []
    for t, raw in enumerate(_lines(_read_text(source))):
        tok = raw.strip()
        if not tok:
            continue
        v = _parse_int(tok)
        if v is None or v < 0:
            raise InputError(f"not a non-negative integer label: {_quote(tok)}", source=source,
                             line=t + 1)
        if v > INT_MAX:
            raise InputError(f"label {_quote(tok)} is too large", source=source, line=t + 1)
        out.append(v)
    return np.asarray(out, dtype=np.int64)


def read_weights(path, n: int | None = None) -> np.ndarray:
    """Read point weights, one positive finite number a line (blank lines skipped).

    ``n``: the number of points; a file with another number of weights is an
    :class:`InputError`, as is a line that is not a positive finite number (named by line).
    """
    source = os.fspath(path)
    out = []
    last = 0
    for t, raw in enumerate(_lines(_read_text(source))):
        tok = raw.strip()
        if not tok:
            continue
        try:
            if not _plain(tok):
                raise ValueError(tok)
            v = float(tok)
        except ValueError:
            raise InputError(f"not a number: {_quote(tok)}", source=source, line=t + 1) from None
        if not math.isfinite(v):
            raise InputError(f"weight {_quote(tok)} is not finite", source=source, line=t + 1)
        if v <= 0:
            raise InputError(f"weight {_quote(tok)} is not positive (weights must be > 0)",
                             source=source, line=t + 1)
        if v < sys.float_info.min:  # subnormal: most digits lost, products underflow to 0
            raise InputError(f"weight {_quote(tok)} is below 2.2e-308 (subnormal)",
                             source=source, line=t + 1)
        out.append(v)
        last = t + 1
    if n is not None and len(out) != n:
        more = f", the last on line {last}" if out else ""
        raise InputError(f"{len(out)} weights (one a line{more}) for the {n} points of the "
                         "data", source=source)
    return np.asarray(out, dtype=np.float64)


def jsonable(obj: Any) -> Any:
    """Convert numpy arrays/scalars, dataclasses, paths and sets to JSON types.

    Non-finite floats become ``null`` (strict JSON has no inf/nan).
    """
    if isinstance(obj, dict):
        return {str(key): jsonable(v) for key, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return [jsonable(v) for v in sorted(obj)]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        v = float(obj)
        return v if math.isfinite(v) else None
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return jsonable({f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)})
    if isinstance(obj, pathlib.PurePath):
        return str(obj)
    return obj


def write_json(path, obj: Any) -> None:
    """Write ``obj`` as indented JSON (numpy-aware, see :func:`jsonable`); ``'-'`` = stdout."""
    text = json.dumps(jsonable(obj), indent=2, allow_nan=False) + "\n"
    with writing(path) as fh:
        fh.write(text)
