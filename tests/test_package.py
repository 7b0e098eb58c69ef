"""The package's shape: stages as subpackages, analysis and report without torch, no import
cycles, and a data contract that imports no measuring code (docs/design.md)."""

from __future__ import annotations

import ast
import subprocess
import sys

from conftest import REPO

SRC = REPO / "src"
STAGES = ("catalog", "measure", "accuracy", "analysis", "report")


def _run(code: str) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter: what a module imports cannot hide behind this one's."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


def test_analysis_and_report_import_no_torch():
    code = (
        "import importlib, pkgutil, sys\n"
        "import joulebench.analysis, joulebench.report\n"
        "names = []\n"
        "for pkg in (joulebench.analysis, joulebench.report):\n"
        "    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
        "        importlib.import_module(m.name)\n"
        "        names.append(m.name)\n"
        "bad = [m for m in ('torch', 'timm', 'torchvision') if m in sys.modules]\n"
        "assert not bad, bad\n"
        "print(len(names), ' '.join(names))\n"
    )
    res = _run(code)
    assert res.returncode == 0, res.stderr
    count, names = res.stdout.split(" ", 1)
    assert int(count) >= 6  # summary, score, fits, best_models, figures, webapp
    assert "joulebench.report.webapp" in names and "joulebench.analysis.score" in names


def test_the_two_subpackages_alone_import_no_torch():
    res = _run(
        "import sys, joulebench.analysis, joulebench.report\n"
        "assert 'torch' not in sys.modules and 'timm' not in sys.modules\n"
    )
    assert res.returncode == 0, res.stderr


def test_the_data_contract_imports_no_measuring_code():
    tree = ast.parse((SRC / "joulebench" / "tables.py").read_text())
    imported = [
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    ]
    assert not [m for m in imported if m and m.startswith("joulebench")], imported
    res = _run(
        "import sys, joulebench.tables\n"
        "bad = [m for m in sys.modules if m.startswith(('joulebench.measure', 'torch'))]\n"
        "assert not bad, bad\n"
    )
    assert res.returncode == 0, res.stderr


def _module_name(path) -> str:
    name = ".".join(path.relative_to(SRC).with_suffix("").parts)
    return name.removesuffix(".__init__")


def _import_graph() -> dict[str, set[str]]:
    """joulebench module -> the joulebench modules it imports, lazy imports included."""
    modules = {_module_name(p): p for p in (SRC / "joulebench").rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle, as the modules along it, or [] when there is none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        state[node] = 2
        path.pop()
        return []

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return []


def test_no_module_imports_itself_back():
    graph = _import_graph()
    assert "joulebench.catalog.build" in graph["joulebench.cli"]  # lazy imports count
    assert not _cycle(graph), " -> ".join(_cycle(graph))
    # the catalog's three modules: build uses models and workloads, never the reverse
    assert not graph["joulebench.catalog.workloads"]
    assert graph["joulebench.catalog.models"] == {"joulebench.catalog.workloads"}


def test_the_cycle_finder_finds_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) == []


def test_stages_are_subpackages_that_say_what_they_are():
    for stage in STAGES:
        init = SRC / "joulebench" / stage / "__init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and len(doc) > 200, stage
        assert "docs/design.md" in doc, stage
    flat = sorted(p.stem for p in (SRC / "joulebench").glob("*.py"))
    assert flat == ["__init__", "__main__", "cli", "plan", "stats", "study", "tables"]


def test_the_command_runs_as_a_module():
    res = subprocess.run(
        [sys.executable, "-m", "joulebench", "columns", "--table", "idle"],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    assert "idle_power_w (float64) [W]" in res.stdout
