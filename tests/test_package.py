"""The package's shape: stages as subpackages, analysis and report without torch, no import
cycles, and a data contract that imports no measuring code (docs/design.md)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys

from conftest import REPO

SRC = REPO / "src"
STAGES = ("catalog", "core", "accuracy", "analysis", "report")


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
    # safe_text and flags: every layer may use them; tables reads and writes through table_io
    # and renders the flags registry into docs/columns.md
    allowed = {
        "table_io.py": set(),
        "safe_text.py": set(),
        "flags.py": set(),
        "tables.py": {"joulebench.table_io", "joulebench.flags.flags_markdown"},
    }
    for leaf, others in allowed.items():
        tree = ast.parse((SRC / "joulebench" / leaf).read_text())
        imported = [
            f"{node.module}.{alias.name}" if isinstance(node, ast.ImportFrom) else alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in node.names
        ]
        ours = {m for m in imported if m.startswith("joulebench")}
        assert ours == others, (leaf, imported)
    res = _run(
        "import sys, joulebench.tables\n"
        "bad = [m for m in sys.modules if m.startswith(('joulebench.core', 'torch'))]\n"
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
    assert "joulebench.catalog.build" in graph["joulebench.cli.measure"]  # lazy imports count
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
    top = [
        "__init__",
        "__main__",
        "config_schema",
        "flags",
        "plan",
        "prerun",
        "rule_settings",
        "safe_text",
        "selection",
        "stats",
    ]
    assert flat == [*top, "study", "table_io", "tables"]
    assert (SRC / "joulebench" / "cli" / "__init__.py").is_file()  # the command: a package


def test_the_command_runs_as_a_module():
    res = subprocess.run(
        [sys.executable, "-m", "joulebench", "columns", "--table", "idle"],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    assert "idle_power_w (float64) [W]" in res.stdout


# ------------------------------------------------------------------ layers that import one way

# Lowest first: a module imports only modules of its own layer or below (lazy imports too).
LAYERS = (
    # and the root (its __version__); safe_text and flags import no joulebench module
    (
        "joulebench.tables",
        "joulebench.table_io",
        "joulebench.study",
        "joulebench.config_schema",
        "joulebench.stats",
        "joulebench.safe_text",
        "joulebench.flags",
    ),
    ("joulebench.catalog",),
    # the measuring core; a device's physics, checked (its fits read the core's); devices,
    # slots and leases; the jobs that run the core, supervised (profile, idle, the check
    # before a GPU's first job); the simulator above them all, loaded by name
    ("joulebench.core",),
    ("joulebench.check",),
    ("joulebench.schedule",),
    ("joulebench.jobs",),
    ("joulebench.sim",),
    # the Python API over the measuring stage; the root and `joulebench.measure(...)` name it
    # (importlib), never import it: it sits above them
    ("joulebench.api",),
    ("joulebench.accuracy",),
    ("joulebench.analysis",),
    ("joulebench.report",),
    # a study before and while it runs: prerun calls each stage's validator, the plan and
    # status read a study through it
    ("joulebench.prerun", "joulebench.plan", "joulebench.status", "joulebench.selection"),
    # rule_settings names the stage functions the commands call (by name, not imported)
    ("joulebench.cli", "joulebench.__main__", "joulebench.rule_settings"),
)
SIMULATOR = "joulebench.sim"
SIM_BACKEND = "joulebench.sim.backend"
BACKENDS = "joulebench.core.backends"


def _layer(module: str) -> int:
    """The index of `module`'s layer: the longest prefix in LAYERS that names it."""
    if module == "joulebench":  # the package's root holds its version only
        return 0
    best, found = -1, None
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, found = len(prefix), index
    assert found is not None, f"{module} is in no layer"
    return found


def _upward(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{m} -> {t}" for m, targets in graph.items() for t in targets if _layer(t) > _layer(m)
    )


def test_layers_import_one_way():
    """tables/study/stats < catalog < measure < api < accuracy < analysis < report < prerun,
    plan, status < cli."""
    graph = _import_graph()
    assert not _upward(graph), _upward(graph)
    assert "joulebench.jobs.config_time" in graph["joulebench.plan"]


def test_the_layer_check_finds_an_upward_import():
    assert _upward({"joulebench.jobs.profile": {"joulebench.analysis.score"}}) == [
        "joulebench.jobs.profile -> joulebench.analysis.score"
    ]
    assert not _upward({"joulebench.analysis.score": {"joulebench.core.backends.base"}})


def test_production_code_never_imports_the_simulator():
    """Only the simulator itself and the simulated backend import sim; nothing
    imports the simulated backend (the registry loads it by name)."""
    graph = _import_graph()
    bad = [
        f"{m} -> {t}"
        for m, targets in graph.items()
        for t in targets
        if t.startswith(SIMULATOR) and not m.startswith(SIMULATOR)
    ]
    assert not bad, bad
    assert not [m for m, targets in graph.items() if SIM_BACKEND in targets]
    assert SIMULATOR + ".wall" in graph[SIM_BACKEND]  # the check sees imports at all
    # no backend module is imported by another module outside backends/: the registry's
    kinds = [m for m in graph if m.startswith(BACKENDS + ".") and m.rsplit(".", 1)[1] in KINDS]
    importers = {m for m, targets in graph.items() for t in targets if t in kinds}
    # (the simulated backend builds on the CPU's)
    assert importers <= {m for m in graph if m.startswith(BACKENDS)} | {SIM_BACKEND}, importers


KINDS = ("cpu", "cuda", "rocm", "sim")
# How code outside the backends would test a device string: a comparison with (or membership
# in) a device-like literal, startswith/endswith one, ROCm's torch.version.hip, the CUDA env.
_DEVICE_LITERAL = re.compile(r"(cpu|cuda)(:\d+)?|sim:.*")
_DEVICE_PREFIX = re.compile(r"(cpu|cuda|sim)")


def _device_tests(tree: ast.AST) -> list[int]:
    """Lines of `tree` that test a device string (see above)."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for value in (node.left, *node.comparators):
                items = value.elts if isinstance(value, ast.Tuple | ast.List | ast.Set) else [value]
                literal = [v.value for v in items if isinstance(v, ast.Constant)]
                if any(isinstance(v, str) and _DEVICE_LITERAL.fullmatch(v) for v in literal):
                    lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            arg = node.args[0] if node.args else None
            if node.func.attr in ("startswith", "endswith") and isinstance(arg, ast.Constant):
                if isinstance(arg.value, str) and _DEVICE_PREFIX.match(arg.value):
                    lines.append(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr == "hip":
            lines.append(node.lineno)
        elif isinstance(node, ast.Constant) and node.value == "CUDA_VISIBLE_DEVICES":
            lines.append(node.lineno)
    return lines


def test_no_module_outside_the_backends_tests_a_device_string():
    found = []
    for path in sorted((SRC / "joulebench").rglob("*.py")):
        if path.is_relative_to(SRC / "joulebench" / "core" / "backends"):
            continue
        found += [
            f"{path.relative_to(SRC)}:{n}" for n in _device_tests(ast.parse(path.read_text()))
        ]
    assert not found, found


def test_the_device_string_check_finds_each_form():
    code = (
        'a == "cpu"\n"cuda:1" != b\nd in ("cuda", "x")\nd.startswith("sim")\n'
        "torch.version.hip\nenv['CUDA_VISIBLE_DEVICES']\nok == CPU_PART\n"
    )
    assert _device_tests(ast.parse(code)) == [1, 2, 3, 4, 5, 6]


def test_no_function_is_longer_than_80_lines():
    longest = []
    for path in sorted((SRC / "joulebench").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                longest.append((length, f"{path.relative_to(SRC)} {node.name}"))
    too_long = [f"{where} ({n} lines)" for n, where in longest if n > 80]
    assert not too_long, too_long
    assert max(longest)[0] > 40  # the check sees functions at all


def test_no_file_holds_a_merge_conflict_marker():
    """A conflict resolved by hand must leave none behind (one once sat in a docstring)."""
    import subprocess

    files = subprocess.run(
        ["git", "ls-files", "src", "tests", "docs", "workflow", "bench", "README.md"],
        cwd=REPO,
        capture_output=True,
        text=True,
    ).stdout.split()
    marker = re.compile(r"^(<{7}|>{7}) ", re.M)
    found = [f for f in files if (REPO / f).is_file() and f.endswith((".py", ".md", ".smk", ".js"))
             and marker.search((REPO / f).read_text(errors="replace"))]  # fmt: skip
    assert not found, found
