"""pcsos.io: every reader on good and bad files, writers round-trip."""

import codecs
import json
import re

import numpy as np
import pytest

from pcsos.errors import InfeasibleError, InputError
from pcsos.io import (
    read_constraints,
    read_data,
    read_labels,
    read_result_matrix,
    write_labels,
    write_result_matrix,
)


def _w(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


# ------------------------------------------------------------------ pc-sos-sdp data
def test_header_n_d_k(tmp_path):
    p = _w(tmp_path, "d.txt", "3 2 2\n1 2\n3 4\n5 6\n")
    df = read_data(p)
    assert df.header == "n d k" and df.k == 2 and df.classes is None
    np.testing.assert_array_equal(df.X, [[1, 2], [3, 4], [5, 6]])
    assert any("header 'n d k' seen" in note for note in df.notes)


def test_header_n_d(tmp_path):
    df = read_data(_w(tmp_path, "d.txt", "2 3\n1 2 3\n4 5 6\n\n"))
    assert df.header == "n d" and df.k is None and df.X.shape == (2, 3)


def test_header_disagrees_with_rows_is_an_error(tmp_path):
    with pytest.raises(InputError) as exc:
        read_data(_w(tmp_path, "d.txt", "5 3 2\n1 2\n3 4\n"))
    assert exc.value.line == 1 and "n = 5, d = 3" in str(exc.value)
    assert "2 data rows of 2 values" in str(exc.value)
    # only the count wrong, and only the width wrong
    with pytest.raises(InputError, match="says n = 3, but"):
        read_data(_w(tmp_path, "d.txt", "3 2\n1 2\n3 4\n"))
    with pytest.raises(InputError, match="says d = 1, but"):
        read_data(_w(tmp_path, "d.txt", "2 1\n1 2\n3 4\n"))


def test_data_is_not_rescaled(tmp_path):
    df = read_data(_w(tmp_path, "d.txt", "2 1\n1000\n-2e-3\n"))
    np.testing.assert_array_equal(df.X[:, 0], [1000.0, -0.002])


@pytest.mark.parametrize("text, line, words", [
    ("2 2\n1 2\n3\n", 3, "ragged"),
    ("2 2\n1 2\n3 abc\n", 3, "'abc'"),
    ("2 2\n1 nan\n3 4\n", 2, "non-finite"),
    ("2 2\n1 2\n3 inf\n", 3, "non-finite"),
    ("1.5 2\n1 2\n", 1, "bad header"),
    ("2 2 2 2\n1 2\n", 1, "bad header"),
    ("hello\n1 2\n", 1, "bad header"),
    ("2 2\n", 1, "no data rows"),
])
def test_bad_data_names_file_and_line(tmp_path, text, line, words):
    p = _w(tmp_path, "bad.txt", text)
    with pytest.raises(InputError) as ei:
        read_data(p)
    assert ei.value.line == line and ei.value.source == str(p)
    assert f"bad.txt:{line}:" in str(ei.value) and words in str(ei.value)


def test_missing_and_empty_file(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_data(tmp_path / "nope.txt")
    with pytest.raises(InputError, match="empty"):
        read_data(_w(tmp_path, "e.txt", ""))


# ------------------------------------------------------------------ CSV / numpy
def test_csv_with_class_column(tmp_path):
    df = read_data(_w(tmp_path, "d.csv", "x0,x1,class\n1,2,0\n3,4,2\n5,6,1\n"))
    assert df.header == "csv" and df.k == 3
    np.testing.assert_array_equal(df.classes, [0, 2, 1])
    np.testing.assert_array_equal(df.X, [[1, 2], [3, 4], [5, 6]])
    assert any("'class'" in note for note in df.notes)


def test_csv_without_header_or_class(tmp_path):
    df = read_data(_w(tmp_path, "d.csv", "1,2\n3,4\n"))
    assert df.header == "csv (no header)" and df.k is None and df.X.shape == (2, 2)
    df = read_data(_w(tmp_path, "e.csv", "a,b\n1,2\n3,4\n"))
    assert df.classes is None and df.X.shape == (2, 2)


@pytest.mark.parametrize("text, line", [
    ("x0,x1,class\n1,2,0\n3,0\n", 3),
    ("x0,x1,class\n1,2,0\n3,x,1\n", 3),
    ("x0,x1,class\n1,2,0.5\n", 2),
    ("x0,x1,class\n1,nan,0\n", 2),
])
def test_bad_csv_names_line(tmp_path, text, line):
    with pytest.raises(InputError) as ei:
        read_data(_w(tmp_path, "bad.csv", text))
    assert ei.value.line == line


def test_numpy_files(tmp_path):
    X = np.arange(6.0).reshape(3, 2)
    np.save(tmp_path / "a.npy", X)
    df = read_data(tmp_path / "a.npy")
    assert df.header == "npy" and df.k is None
    np.testing.assert_array_equal(df.X, X)
    np.savez(tmp_path / "b.npz", X=X, y=np.array([0, 1, 1]))
    df = read_data(tmp_path / "b.npz")
    assert df.header == "npz" and df.k == 2
    np.testing.assert_array_equal(df.classes, [0, 1, 1])
    np.save(tmp_path / "c.npy", np.array([[1.0, np.nan]]))
    with pytest.raises(InputError, match="non-finite"):
        read_data(tmp_path / "c.npy")


# ------------------------------------------------------------------ constraints
def test_text_constraints(tmp_path):
    c = read_constraints(_w(tmp_path, "c.txt", "CL 3 1\n\nML 0 1\nML 0 1\nml 2 3\n"), n=4)
    assert c.ml == [(0, 1), (0, 1), (2, 3)] and c.cl == [(3, 1)]
    assert c.format == "text"


def test_empty_constraint_file_is_unconstrained(tmp_path):
    c = read_constraints(_w(tmp_path, "c.txt", "\n\n"), n=4)
    assert c.ml == [] and c.cl == [] and "unconstrained" in c.notes[0]


@pytest.mark.parametrize("text, line, words", [
    ("ML 0 1\nXX 1 2\n", 2, "unknown constraint type 'XX'"),
    ("ML 0 1\nCL 1 9\n", 2, "out of range 0..3"),
    ("ML -1 2\n", 1, "out of range"),
    ("ML 0 1\n\nCL 2 2\n", 3, "self pair"),
    ("ML 0\n", 1, "two indices"),
    ("ML 0 1 2\n", 1, "two indices"),
    ("CL 0 1.0\n", 1, "integers"),
    ("DELTA x\n", 1, "non-numeric"),
    ("DELTA 1\nDELTA 2\n", 2, "twice"),
])
def test_bad_constraints_name_file_line_and_text(tmp_path, text, line, words):
    p = _w(tmp_path, "bad_c.txt", text)
    X = np.zeros((4, 1))
    with pytest.raises(InputError) as ei:
        read_constraints(p, n=4, X=X)
    assert ei.value.line == line and f"bad_c.txt:{line}:" in str(ei.value)
    assert words in str(ei.value)
    bad_line = text.splitlines()[line - 1].strip()
    if words not in ("non-numeric",):
        assert bad_line in str(ei.value)


def test_delta_gamma_expansion_matches_distances(tmp_path):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(12, 2))
    c = read_constraints(_w(tmp_path, "c.txt", "ML 0 1\nDELTA 0.5\nGAMMA 2.5\n"), X=X)
    dist = np.linalg.norm(X[:, None] - X[None], axis=2)
    want_ml = {(i, j) for i in range(12) for j in range(i + 1, 12) if dist[i, j] < 0.5}
    want_cl = {(i, j) for i in range(12) for j in range(i + 1, 12) if dist[i, j] > 2.5}
    assert set(c.ml[1:]) == want_ml and c.ml[0] == (0, 1)
    assert set(c.cl) == want_cl
    assert c.n_delta == len(want_ml) and c.n_gamma == len(want_cl)
    assert any(f"added {len(want_ml)} must-link" in note for note in c.notes)


def test_delta_greater_than_gamma(tmp_path):
    X = np.array([[0.0], [1.0], [5.0]])
    with pytest.raises(InfeasibleError) as ei:
        read_constraints(_w(tmp_path, "c.txt", "DELTA 2\nGAMMA 0.5\n"), X=X)
    assert ei.value.reason == "delta_gamma" and ei.value.pairs == [(0, 1)]
    # no pair at a distance in (GAMMA, DELTA): no conflict, but a note
    c = read_constraints(_w(tmp_path, "d.txt", "DELTA 3\nGAMMA 2\n"), X=X)
    assert any("no conflict" in note for note in c.notes)
    with pytest.raises(InputError, match="need the data"):
        read_constraints(_w(tmp_path, "e.txt", "DELTA 3\n"))


def test_json_constraints(tmp_path):
    obj = {"ml": [[0, 1]], "cl": [[1, 2], [2, 3]], "sml": [[0, 2]], "scl": [],
           "sml_proba": [0.9], "scl_proba": [], "extra": 1}
    c = read_constraints(_w(tmp_path, "c.json", json.dumps(obj)), n=4)
    assert c.ml == [(0, 1)] and c.cl == [(1, 2), (2, 3)] and c.format == "json"
    notes = " ".join(c.notes)
    assert "'sml'" in notes and "NOT used" in notes and "'sml_proba'" in notes
    assert "'scl'" not in notes  # empty soft lists are fine
    assert "'extra'" in notes


@pytest.mark.parametrize("obj, words", [
    ({"ml": [[0, 0]]}, "self pair"),
    ({"cl": [[0, 7]]}, "out of range"),
    ({"ml": [[0, 1, 2]]}, "two indices"),
    ({"ml": [[0, 1.5]]}, "integers"),
    ({"ml": 3}, "list"),
])
def test_bad_json_constraints(tmp_path, obj, words):
    with pytest.raises(InputError, match=words) as ei:
        read_constraints(_w(tmp_path, "c.json", json.dumps(obj)), n=4)
    assert "c.json:1:" in str(ei.value)


def test_invalid_json_names_line(tmp_path):
    with pytest.raises(InputError) as ei:
        read_constraints(_w(tmp_path, "c.json", '{"ml": [[0, 1]],\n "cl": [[1, 2],]}'))
    assert ei.value.line == 2


# ------------------------------------------------------------------ results
def test_result_matrix_round_trip(tmp_path):
    lab = np.array([2, 0, 1, 1, 0])
    write_result_matrix(tmp_path / "r.txt", lab, 3)
    assert (tmp_path / "r.txt").read_text().splitlines()[0] == "0 0 1"
    np.testing.assert_array_equal(read_result_matrix(tmp_path / "r.txt"), lab)
    with pytest.raises(InputError, match="out of range"):
        write_result_matrix(tmp_path / "r.txt", lab, 2)
    bad = _w(tmp_path, "b.txt", "0 1\n1 1\n")
    with pytest.raises(InputError) as ei:
        read_result_matrix(bad)
    assert ei.value.line == 2


def test_labels_round_trip(tmp_path, capsys):
    lab = np.array([3, 0, 1])
    write_labels(tmp_path / "l.txt", lab)
    np.testing.assert_array_equal(read_labels(tmp_path / "l.txt"), lab)
    write_labels("-", lab)
    assert capsys.readouterr().out == "3\n0\n1\n"
    with pytest.raises(InputError) as ei:
        read_labels(_w(tmp_path, "b.txt", "1\nx\n"))
    assert ei.value.line == 2


# ------------------------------------------------------------------ byte-order mark
BOM_CASES = [
    pytest.param("d.txt", "3 2 2\n1 2\n3 4\n5 6\n", read_data, id="data-n-d-k"),
    pytest.param("d.txt", "2 3\n1 2 3\n4 5 6\n", read_data, id="data-n-d"),
    pytest.param("d.csv", "x0,x1,class\n1,2,0\n3,4,1\n", read_data, id="csv"),
    # without the fix the BOM made '\ufeff1' a non-number: the first row became a header
    pytest.param("d.csv", "1,2\n3,4\n", read_data, id="csv-no-header"),
    pytest.param("c.txt", "ML 0 1\nCL 1 2\n", read_constraints, id="ml-cl"),
    pytest.param("c.json", '{"ml": [[0, 1]], "cl": [[1, 2]]}', read_constraints, id="json"),
    pytest.param("c", '{"ml": [[0, 1]], "cl": [[1, 2]]}', read_constraints,
                 id="json-by-content"),
    pytest.param("r.txt", "0 1\n1 0\n", read_result_matrix, id="result-matrix"),
    pytest.param("l.txt", "1\n0\n", read_labels, id="labels"),
]


def _same(a, b):
    if isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b)
        return
    assert type(a) is type(b)
    fields = {k: v for k, v in vars(a).items() if k != "source"}
    for key, val in fields.items():
        if isinstance(val, np.ndarray):
            np.testing.assert_array_equal(val, getattr(b, key))
        else:
            assert val == getattr(b, key), key


@pytest.mark.parametrize("name, text, reader", BOM_CASES)
def test_leading_bom_is_ignored_in_every_text_format(tmp_path, name, text, reader):
    plain = tmp_path / "plain" / name
    bom = tmp_path / "bom" / name
    for p, prefix in ((plain, b""), (bom, codecs.BOM_UTF8)):
        p.parent.mkdir()
        p.write_bytes(prefix + text.encode())
    _same(reader(bom), reader(plain))


def test_bom_keeps_the_byte_offset_of_a_decoding_error(tmp_path):
    p = tmp_path / "d.txt"
    p.write_bytes(codecs.BOM_UTF8 + b"1 1\n\xff\n")
    with pytest.raises(InputError, match="not a text file .* at byte 7"):
        read_data(p)


# ------------------------------------------------------------------ very long lines
BIG = 1 << 20


@pytest.mark.parametrize("reader, name, text, line", [
    pytest.param(read_constraints, "c.txt", "ML 0 1\nML " + "1 " * (BIG // 2) + "\n", 2,
                 id="ml-arity"),
    pytest.param(read_constraints, "c.txt", "ML 0 1\n" + "X" * BIG + " 0 1\n", 2,
                 id="unknown-type"),
    pytest.param(read_constraints, "c.txt", "CL 0 " + "9" * BIG + "\n", 1, id="cl-index"),
    pytest.param(read_constraints, "c.txt", "DELTA " + "d" * BIG + "\n", 1, id="delta"),
    pytest.param(read_constraints, "c.json", '{"ml": [[0, 1, ' + "2, " * BIG + "3]]}", 1,
                 id="json-pair"),
    pytest.param(read_data, "d.txt", "2 2\n1 2\n3 " + "x" * BIG + "\n", 3, id="data-token"),
    pytest.param(read_data, "d.txt", "2 " + "2 " * BIG + "\n", 1, id="data-header"),
    # below the csv module's field limit (see the next test)
    pytest.param(read_data, "d.csv", "x0,class\n1,0\n2," + "y" * 100_000 + "\n", 3,
                 id="csv-class"),
    pytest.param(read_result_matrix, "r.txt", "0 " * BIG + "\n", 1, id="result-row"),
    pytest.param(read_labels, "l.txt", "0\n" + "z" * BIG + "\n", 2, id="label"),
])
def test_error_quotes_at_most_80_characters_of_a_long_line(tmp_path, reader, name, text,
                                                           line):
    p = _w(tmp_path, name, text)
    with pytest.raises(InputError) as ei:
        reader(p)
    msg = str(ei.value)
    assert ei.value.line == line and f"{name}:{line}:" in msg
    assert len(msg) < 300 + len(str(p)), msg
    assert re.search(r"\.\.\. \(\d{6,} characters\)", msg), msg


def test_csv_field_over_the_csv_module_limit_is_an_input_error(tmp_path):
    p = _w(tmp_path, "d.csv", "x0,class\n1,0\n2," + "y" * BIG + "\n3,1\n")
    with pytest.raises(InputError) as ei:
        read_data(p)
    assert ei.value.line == 3 and "field limit" in str(ei.value)
    assert len(str(ei.value)) < 300 + len(str(p))


def test_error_keeps_the_start_of_a_long_line(tmp_path):
    bad = "CL 0 1 " + " ".join(map(str, range(100)))
    with pytest.raises(InputError) as ei:
        read_constraints(_w(tmp_path, "c.txt", bad + "\n"), n=4)
    msg = str(ei.value)
    assert f"'{bad[:60]}" in msg and f"... ({len(bad)} characters)" in msg
    quoted = msg[msg.index("'"):msg.index("...")]
    assert len(quoted) <= 80


def test_a_json_key_given_twice_is_an_error_not_a_lost_value(tmp_path):
    # json.loads keeps the last value: the first list of pairs was dropped without a word
    path = _w(tmp_path, "c.json", '{"ml": [[0, 1]], "cl": [], "ml": [[2, 3]]}')
    with pytest.raises(InputError, match="the key 'ml' appears twice"):
        read_constraints(path, n=5)
    nested = _w(tmp_path, "r.json", '{"a": {"b": 1, "b": 2}}')
    from pcsos.io import _load_json

    with pytest.raises(InputError, match="the key 'b' appears twice"):
        _load_json(nested.read_text(), str(nested))


def test_a_csv_row_of_empty_fields_is_an_error_not_a_dropped_point(tmp_path):
    # ',,' was skipped as a blank line, shifting every later point's index
    with pytest.raises(InputError) as exc:
        read_data(_w(tmp_path, "d.csv", "x0,x1,class\n0,0,0\n,,\n5,5,1\n"))
    assert exc.value.line == 3
    df = read_data(_w(tmp_path, "d.csv", "x0,x1,class\n0,0,0\n\n5,5,1\n   \n"))
    assert df.X.shape == (2, 2)  # blank lines are still skipped


@pytest.mark.parametrize("sep", ["\x0c", "\x1c", "\x85", "\u2028"])
def test_only_a_newline_ends_a_line(tmp_path, sep):
    # str.splitlines broke at these: one row became two points, and every later line
    # number was off by one
    with pytest.raises(InputError) as exc:
        read_data(_w(tmp_path, "d.txt", f"3 2\n0 0{sep}1 1\n5 5\n6 6\n"))
    assert "ragged row" in str(exc.value)
    with pytest.raises(InputError) as exc:
        read_constraints(_w(tmp_path, "c.txt", f"ML 0 1{sep}CL 2 3\nML x\n"), n=5)
    assert exc.value.line == 1


@pytest.mark.parametrize("token", ["1_0", "\u0663", "\uff11", "1e1_0"])
def test_numbers_are_written_in_ascii_without_underscores(tmp_path, token):
    # Python's int and float read '1_0' as 10 and other scripts' digits as digits: a pair
    # 'ML 0 1_0' named point 10
    with pytest.raises(InputError, match="non-numeric value"):
        read_data(_w(tmp_path, "d.txt", f"2 1\n{token}\n1\n"))
    with pytest.raises(InputError, match="non-numeric value"):
        read_data(_w(tmp_path, "d.csv", f"x0,class\n{token},0\n1,1\n"))
    with pytest.raises(InputError, match="indices must be integers"):
        read_constraints(_w(tmp_path, "c.txt", f"ML 0 {token}\n"), n=20)
    from pcsos.io import read_weights

    with pytest.raises(InputError, match="not a number"):
        read_weights(_w(tmp_path, "w.txt", f"{token}\n"), n=1)
    # a header's names may hold them; the numbers below are read
    assert read_data(_w(tmp_path, "d.csv", "x_0,class\n1,0\n2,1\n")).X.tolist() == [[1.0],
                                                                                      [2.0]]


def test_an_empty_numpy_array_is_no_data(tmp_path):
    # it was reported later as 'k = 2 exceeds the number of points n = 0'
    path = tmp_path / "e.npy"
    np.save(path, np.zeros((0, 2)))
    with pytest.raises(InputError, match=r"no data: the array has shape \(0, 2\)"):
        read_data(path)


def test_rows_of_empty_fields_after_the_data_are_dropped_with_a_note(tmp_path):
    # a spreadsheet leaves them; they shift no index (between data rows they are errors)
    df = read_data(_w(tmp_path, "d.csv", "a,b\r\n1.5,2\r\n3,4\r\n,\r\n,\r\n"))
    assert df.X.tolist() == [[1.5, 2.0], [3.0, 4.0]]
    assert any("2 row(s) of empty fields after the last data row" in n for n in df.notes)


def test_a_ragged_first_row_is_the_one_named(tmp_path):
    # a note after the first point ('0 0 # first') was blamed on line 3
    with pytest.raises(InputError) as exc:
        read_data(_w(tmp_path, "d.txt", "3 2\n0 0 # first\n1 1\n2 2\n"))
    assert exc.value.line == 2 and "the header says d = 2" in str(exc.value)
    with pytest.raises(InputError) as exc:
        read_data(_w(tmp_path, "d.txt", "3 2\n0 0\n1 1 1\n2 2\n"))
    assert exc.value.line == 3


def test_csv_errors_name_the_line_not_the_record(tmp_path):
    # a quoted field over two lines made the record's number one less than the line's
    with pytest.raises(InputError) as exc:
        read_data(_w(tmp_path, "d.csv", 'x0,x1,class\n"1\n",2,0\n3,x,1\n'))
    assert exc.value.line == 4


def test_a_write_that_fails_midway_leaves_the_old_file_whole(tmp_path):
    from pcsos.io import writing

    out = tmp_path / "res.json"
    out.write_text('{"old": true}\n')
    out.chmod(0o640)
    with pytest.raises(InputError, match="cannot write: No space left"):
        with writing(out) as fh:
            fh.write('{"new": ')
            raise OSError(28, "No space left on device")  # as a full disk would, midway
    assert out.read_text() == '{"old": true}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res.json"]  # no temporary left
    with writing(out) as fh:
        fh.write('{"new": true}\n')
    assert out.read_text() == '{"new": true}\n' and (out.stat().st_mode & 0o777) == 0o640
