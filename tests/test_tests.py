"""The tests' own shape: shared builders live in tests/helpers/ (or conftest), never in a test
module that another imports; a test module that needs no torch collects without it."""

from __future__ import annotations

import ast
import subprocess
import sys

from conftest import REPO

TESTS = REPO / "tests"
TORCH = ("torch", "timm", "torchvision")


def _imported(tree: ast.AST) -> set[str]:
    """The top-level names of every module `tree` imports (lazy imports included)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def _test_modules() -> list:
    return sorted(TESTS.rglob("test_*.py"))


def test_no_test_module_imports_another():
    """Tests, helpers and benches alike import builders from tests/helpers/."""
    tests = {path.stem for path in _test_modules()}
    found = [
        f"{path.relative_to(REPO)} imports {name}"
        for path in sorted([*TESTS.rglob("*.py"), *(REPO / "bench").glob("*.py")])
        for name in sorted(_imported(ast.parse(path.read_text())) & tests)
    ]
    assert not found, found


def test_the_import_check_finds_each_form():
    code = "import test_a\nfrom test_b import x\ndef f():\n    from test_c.d import y\n"
    code += "from . import z\nimport helpers.x\n"
    assert _imported(ast.parse(code)) == {"test_a", "test_b", "test_c", "helpers"}


def _imports_torch_itself(tree: ast.Module) -> bool:
    """Does the module import torch, timm or torchvision when it is imported (not lazily)?"""
    top = [n for n in tree.body if not isinstance(n, ast.FunctionDef | ast.ClassDef)]
    return any(name in TORCH for node in top for name in _imported(node))


def test_modules_that_need_no_torch_collect_without_it():
    """Collected with torch, timm and torchvision unimportable: a module that does not import
    them itself must not get them through a helper or the package (test_check once could not
    be collected without torch because it imported test_profile)."""
    plain = [p for p in _test_modules() if not _imports_torch_itself(ast.parse(p.read_text()))]
    assert TESTS / "check" / "test_check.py" in plain
    assert TESTS / "jobs" / "test_profile.py" not in plain
    hide = f"import sys; sys.modules.update(dict.fromkeys({TORCH!r})); import pytest; "
    run = "sys.exit(pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', *sys.argv[1:]]))"
    res = subprocess.run(
        [sys.executable, "-c", hide + run, *map(str, plain)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]


# Test folders beside the package's: the workflow's end-to-end runs and the bench scripts.
OUTSIDE_PACKAGE = {"workflow": REPO / "workflow", "bench": REPO / "bench"}


def test_test_folders_mirror_the_package():
    """tests/ mirrors src/joulebench/: a test module sits in the folder of the subpackage it
    tests (tests/core/meters/ for joulebench.core.meters), or in tests/workflow/ (the
    Snakemake workflow end to end) or tests/bench/ (the bench scripts)."""
    package, modules = REPO / "src" / "joulebench", _test_modules()
    found = []
    for path in modules:
        folder = path.parent.relative_to(TESTS)
        top = folder.parts[0] if folder.parts else ""
        mirrored = OUTSIDE_PACKAGE.get(top) or package / folder
        if not mirrored.is_dir():
            found.append(f"{path.relative_to(REPO)}: no {mirrored.relative_to(REPO)}/")
    assert not found, found
    assert len({path.name for path in modules}) == len(modules)  # names unique


def test_a_forked_snakemake_run_is_the_command_lines(tmp_path):
    """conftest.snakemake forks each run from one warm interpreter (helpers/forked_snakemake):
    the same exit code and messages as `python -m snakemake` in a new interpreter, and a
    PYTHON* variable of the run's own still gets a new interpreter."""
    from conftest import _SNAKEMAKE, path_without_venv, snakemake
    from helpers.forked_snakemake import needs_fresh_interpreter

    config = {"models": ["resnet18.a1_in1k", "resnet5O"]}
    forked = snakemake(tmp_path, config, "-n")
    argv = ["-s", str(REPO / "Snakefile"), "--directory", str(tmp_path), "--cores", "2", "-n"]
    argv += ["--configfile", str(tmp_path / "test-config.yaml")]
    env = {**_SNAKEMAKE.environ, "PATH": path_without_venv()}
    fresh = subprocess.run(
        [sys.executable, "-m", "snakemake", *argv], capture_output=True, text=True, env=env
    )
    assert forked.returncode == fresh.returncode == 1
    for result in (forked, fresh):
        assert "'resnet5O' is no timm model" in result.stdout + result.stderr
    assert forked.args == fresh.args
    assert not needs_fresh_interpreter(env, _SNAKEMAKE.environ)
    assert needs_fresh_interpreter({**env, "PYTHONPATH": "/x"}, _SNAKEMAKE.environ)
