"""The documentation site: the reference covers the public API, its examples run, and the
site builds with warnings as errors (docs/conf.py; the README's docs command)."""

from __future__ import annotations

import doctest
import importlib
import inspect
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import pcsos
from pcsos.bounds import eig
from pcsos.heuristics import registry

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
RESULTS = ROOT / "benchmarks" / "results"
PAGES = sorted(DOCS.rglob("*.md")) + [ROOT / "README.md"]
EXAMPLES = sorted((ROOT / "examples").glob("plot_*.py"))


def reference_names() -> list[str]:
    """The dotted names in docs/api.rst's autosummary blocks (relative to ``pcsos``)."""
    names, inside = [], False
    for line in (DOCS / "api.rst").read_text().splitlines():
        if line.startswith(".. autosummary::"):
            inside = True
        elif inside and line.strip() and not line.startswith("   "):
            inside = False
        elif inside and re.fullmatch(r"   [A-Za-z_][\w.]*", line):
            names.append(line.strip())
    return names


def resolve(name: str):
    module, _, attr = f"pcsos.{name}".rpartition(".")
    return getattr(importlib.import_module(module), attr)


def sections(obj) -> set[str]:
    doc = inspect.getdoc(obj) or ""
    return {m.group(1) for m in re.finditer(r"^(\w[\w ]*)\n-{3,}$", doc, re.M)}


def test_every_public_name_is_in_the_reference():
    listed = set(reference_names())
    missing = [name for name in pcsos.__all__ if name != "__version__" and name not in listed]
    assert not missing, f"public names without a reference page: {missing}"


@pytest.mark.parametrize("name", [n for n in pcsos.__all__ if n != "__version__"])
def test_public_names_document_parameters_returns_raises_and_an_example(name):
    obj = getattr(pcsos, name)
    have = sections(obj)
    assert "Examples" in have, f"{name}: no Examples section"
    if inspect.isfunction(obj):
        assert {"Parameters", "Returns", "Raises"} <= have, f"{name}: {sorted(have)}"
    elif not issubclass(obj, BaseException):
        assert have & {"Parameters", "Attributes"}, f"{name}: {sorted(have)}"


@pytest.mark.parametrize("name", reference_names())
def test_every_reference_page_documents_parameters_and_returns(name):
    # a page of the reference that says its inputs and outputs in prose only reads as a
    # paragraph; the numpydoc sections give each its own entry
    obj = resolve(name)
    have = sections(obj)
    if inspect.isfunction(obj):
        sig = inspect.signature(obj)
        if sig.parameters:
            assert "Parameters" in have, f"{name}: {sorted(have)}"
        if sig.return_annotation not in (None, "None"):
            assert "Returns" in have, f"{name}: {sorted(have)}"
    elif inspect.isclass(obj) and not issubclass(obj, BaseException):
        assert have & {"Parameters", "Attributes"}, f"{name}: {sorted(have)}"


@pytest.fixture
def own_registries(monkeypatch):
    # the examples register a heuristic and an eigensolver: keep them out of other tests
    monkeypatch.setattr(registry, "_REGISTERED", dict(registry._REGISTERED))
    monkeypatch.setattr(eig, "_REGISTRY", dict(eig._REGISTRY))
    monkeypatch.setattr(eig, "_STATEFUL", set(eig._STATEFUL))


@pytest.mark.parametrize("name", reference_names())
def test_reference_examples_run(name, own_registries):
    obj = resolve(name)
    tests = doctest.DocTestFinder(recurse=False).find(obj, f"pcsos.{name}", globs={})
    examples = [t for t in tests if t.examples]
    if not examples:
        assert name not in pcsos.__all__, f"{name} has no example"
        pytest.skip(f"{name} has no example (not a name of pcsos.__all__)")
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in examples:
        runner.run(test)
    assert runner.failures == 0, f"{runner.failures} failing example(s) in {name} (see stdout)"


def _sphinx(src: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", "-b", "html",
         "-d", str(out / ".doctrees"), *extra, str(src), str(out)],
        capture_output=True, text=True, cwd=ROOT)


def test_site_builds_with_warnings_as_errors_and_runs_every_example(tmp_path):
    for generated in ("generated", "auto_examples"):
        shutil.rmtree(DOCS / generated, ignore_errors=True)
    res = _sphinx(DOCS, tmp_path)
    assert res.returncode == 0, res.stderr[-4000:]
    for name in reference_names():
        page = tmp_path / "generated" / f"pcsos.{name}.html"
        assert page.is_file(), f"no reference page for {name}"
    assert len(EXAMPLES) >= 7
    for script in EXAMPLES:
        page = (tmp_path / "auto_examples" / script.name).with_suffix(".html")
        html = page.read_text()
        # sphinx-gallery puts what the script printed in a sphx-glr-script-out block
        assert "sphx-glr-script-out" in html, f"{script.name}: no output in the site"
    # the figures the examples draw (pcsos.plot's, without pyplot) are in the site too
    assert (tmp_path / "_images" / "sphx_glr_plot_quick_start_001.png").is_file()
    assert (tmp_path / "_images" / "sphx_glr_plot_pair_impact_001.png").is_file()


def test_a_broken_cross_reference_fails_the_build(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    # the site's own configuration, less the gallery (which would run every example)
    (src / "conf.py").write_text(
        "import runpy\n"
        f"globals().update(runpy.run_path({str(DOCS / 'conf.py')!r}))\n"
        "extensions = [e for e in extensions if e != 'sphinx_gallery.gen_gallery']\n")
    (src / "api.rst").write_text("api\n===\n\n.. autoclass:: pcsos.PcsosError\n")
    page = "# t\n\n```{{toctree}}\napi\n```\n\nSee {{py:class}}`{}`.\n"
    (src / "index.md").write_text(page.format("pcsos.PcsosError"))
    res = _sphinx(src, tmp_path / "good")
    assert res.returncode == 0, res.stderr[-4000:]
    (src / "index.md").write_text(page.format("pcsos.NoSuchError"))
    res = _sphinx(src, tmp_path / "bad")
    assert res.returncode != 0
    assert "pcsos.NoSuchError" in res.stderr


# --- benchmarks: a suite, not a journal (issue 49) ------------------------------------------
def _pages_text() -> str:
    return "\n".join(p.read_text() for p in PAGES)


def test_every_results_file_is_cited_in_the_docs():
    text = _pages_text()
    uncited = sorted(f.name for f in RESULTS.iterdir() if f.is_file() and f.name not in text
                     and not f.name.endswith((".tmp", ".lock")))
    assert not uncited, f"results files no page cites (cite or delete them): {uncited}"


def test_every_cited_results_path_exists():
    cited = set()
    for name in re.findall(r"benchmarks/results/([\w.\-]+)", _pages_text()):
        cited.add(name.rstrip("."))
    missing = sorted(name for name in cited if not (RESULTS / name).exists())
    assert not missing, f"cited results files that do not exist: {missing}"


def test_docs_hold_no_commit_hash_and_no_journal_lines():
    # the figures' provenance (code, date, load) belongs in the results rows; the prose states
    # the current figure and the command that makes it
    commit = re.compile(r"\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")
    hashes, long = [], []
    for page in sorted(DOCS.rglob("*.md")):
        for i, line in enumerate(page.read_text().splitlines(), 1):
            where = f"{page.relative_to(ROOT)}:{i}"
            hashes += [f"{where} {m.group()}" for m in commit.finditer(line)]
            if len(line) > 400 and not line.startswith("|"):
                long.append(f"{where} ({len(line)} characters)")
    assert not hashes, f"commit hashes in docs/: {hashes}"
    assert not long, f"prose lines over 400 characters in docs/: {long}"


def test_the_check_sample_in_formats_md_is_the_commands_output():
    # the page shows a whole report; it must be the one the command prints today (the
    # verdict's timing aside)
    page = (DOCS / "formats.md").read_text()
    m = re.search(r"^    \$ (pcsos check .*)\n((?:    .*\n)+)", page, re.M)
    assert m, "docs/formats.md lost its `$ pcsos check` sample"
    args = m.group(1).split()[1:]
    shown = [line[4:] for line in m.group(2).splitlines()]
    out = subprocess.run([sys.executable, "-m", "pcsos", *args], cwd=ROOT, text=True,
                         capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr

    def timeless(lines):
        return [re.sub(r"\d+\.\d+ s\)", "T s)", line) for line in lines]

    assert timeless(out.stdout.splitlines()) == timeless(shown)
