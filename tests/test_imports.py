"""The package's imports point down: nothing outside pcsos/cli imports the CLI, and the
graph of sub-packages and top-level modules has no cycle (every import counted, the ones
inside functions too)."""

from __future__ import annotations

import ast
import pathlib

import networkx as nx

PKG = pathlib.Path(__file__).resolve().parents[1] / "pcsos"
# ``python -m pcsos`` is the command line's own entry point
CLI_ENTRIES = {"__main__.py"}


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: pathlib.Path) -> set[str]:
    """Every pcsos module ``path`` imports, at any depth of its code."""
    here = _module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)  # ``from pcsos import cli``
    return {m for m in out if m == "pcsos" or m.startswith("pcsos.")}


def _unit(module: str) -> str:
    """The node of the folder-level graph: a sub-package, or a top-level module."""
    parts = module.split(".")
    if len(parts) == 1:
        return "pcsos"
    if (PKG / parts[1]).is_dir():
        return parts[1]
    return parts[1] if (PKG / f"{parts[1]}.py").exists() else "pcsos"


def _files():
    return sorted(p for p in PKG.rglob("*.py") if "build" not in p.parts)


def test_nothing_outside_the_cli_imports_it():
    bad = []
    for path in _files():
        rel = path.relative_to(PKG)
        if rel.parts[0] == "cli" or str(rel) in CLI_ENTRIES:
            continue
        hits = sorted(m for m in _imports(path) if m == "pcsos.cli" or m.startswith("pcsos.cli."))
        if hits:
            bad.append(f"{rel}: {', '.join(hits)}")
    assert not bad, "modules outside pcsos/cli import it:\n" + "\n".join(bad)


def test_the_folder_level_graph_has_no_cycle():
    g = nx.DiGraph()
    for path in _files():
        src = _unit(_module_name(path))
        if src == "pcsos":
            continue  # the package's __init__ re-exports the API lazily (PEP 562)
        for mod in _imports(path):
            dst = _unit(mod)
            if dst not in ("pcsos", src):
                g.add_edge(src, dst)
    cycles = list(nx.simple_cycles(g))
    assert not cycles, "import cycles between folders: " + "; ".join(
        " -> ".join(c + [c[0]]) for c in cycles)


def test_function_level_imports_say_why():
    """An import of pcsos inside a function hides an arrow from a reader: allowed only
    for start-up time or an optional dependency, with a ``# lazy: why`` comment on its
    first line or the line above."""
    bad = []
    for path in _files():
        lines = path.read_text().splitlines()
        for fn in ast.walk(ast.parse("\n".join(lines), str(path))):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if not isinstance(node, (ast.Import, ast.ImportFrom)):
                    continue
                names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                         else [a.name for a in node.names])
                if not any(n == "pcsos" or n.startswith("pcsos.") for n in names):
                    continue
                here, above = lines[node.lineno - 1], lines[node.lineno - 2]
                if "# lazy:" not in here and "# lazy:" not in above:
                    bad.append(f"{path.relative_to(PKG)}:{node.lineno}: {here.strip()}")
    assert not sorted(set(bad)), "function-level imports without a reason:\n" + "\n".join(
        sorted(set(bad)))


def test_no_module_shadows_a_lazy_export():
    """``pcsos.NAME`` is a function or class of the API: a submodule of the same name would
    replace it on the package as soon as it is imported."""
    import pcsos

    lazy = pcsos.__all__
    clash = sorted(name for name in lazy
                   if (PKG / f"{name}.py").exists() or (PKG / name).is_dir())
    assert not clash, f"modules named like API names: {clash}"


def test_the_public_namespace_holds_only_public_names():
    """``__all__`` is pinned, and ``dir(pcsos)`` lists it and nothing else: no module (the
    helpers, or a submodule an import bound) and no ``__future__`` feature."""
    import types

    import pcsos
    import pcsos.bounds  # binds pcsos.bounds on the package

    assert pcsos.__all__ == [
        "solve", "Result", "SolverOptions", "PCSOSClustering", "Instance", "Problem",
        "make_instance", "sse", "PcsosError", "InputError", "InfeasibleError",
        "BackendUnavailableError", "UndecidedError", "Feasibility", "check_instance",
        "impact", "certify", "__version__"]
    assert dir(pcsos) == sorted(pcsos.__all__)
    for name in dir(pcsos):
        assert not isinstance(getattr(pcsos, name), types.ModuleType), name
    assert "annotations" not in dir(pcsos) and "importlib" not in dir(pcsos)
