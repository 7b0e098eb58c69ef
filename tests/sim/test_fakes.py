"""The fakes of GPU management libraries against the real APIs: every function a fake
implements exists in the real library with arguments a call to the fake would also pass to
it, and every constant and error class it copies has the real one's value. Also: every NVML
function the code calls exists in the real pynvml (nvidia-ml-py, a dependency).

pynvml imports without a driver, so it is inspected directly. amdsmi loads ROCm's library
when imported, so its installed source (the `amdsmi` dev dependency, a pure-Python wheel) is
read instead; without it installed the amdsmi half is skipped, saying so.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import inspect
import re
import sys
from pathlib import Path

import pynvml
import pytest
from conftest import REPO
from helpers.fake_nvml import FakeNvml

from joulebench.sim import fake_pynvml
from joulebench.sim.fake_pynvml import NvmlModule, SimNvml

FAKE_AMDSMI = REPO / "tests" / "fake_amdsmi" / "amdsmi" / "__init__.py"
NVML_FAKES = (NvmlModule, SimNvml, FakeNvml)


def _params(fn, skip_self: bool = False) -> list[inspect.Parameter]:
    params = list(inspect.signature(fn).parameters.values())
    return params[1:] if skip_self else params


def compatible(fake: list[tuple[str, bool]], real: list[tuple[str, bool]]) -> str:
    """Why a call the fake accepts would not suit the real function, or "". Each list holds
    (name, has a default) of the positional parameters: the fake's are the real's first ones,
    by name, and whatever the real one has beyond them has a default."""
    names, real_names = [n for n, _ in fake], [n for n, _ in real]
    if real_names[: len(names)] != names:
        return f"parameters {names}, the real ones {real_names}"
    if any(not default for _, default in real[len(names) :]):
        return f"the real one also needs {[n for n, d in real[len(names) :] if not d]}"
    return ""


def _nvml_functions() -> dict[str, object]:
    """Every nvml* function a fake NVML implements: name -> the fake's function."""
    out = {}
    for cls in NVML_FAKES:
        for name, fn in vars(cls).items():
            if name.startswith("nvml") and callable(fn):
                out[f"{cls.__name__}.{name}"] = fn
    return out


@pytest.mark.parametrize("where", sorted(_nvml_functions()))
def test_each_fake_nvml_function_is_pynvmls(where):
    fn = _nvml_functions()[where]
    name = where.split(".")[1]
    real = getattr(pynvml, name, None)
    assert real is not None, f"{where}: pynvml has no {name}"
    as_pairs = [(p.name, p.default is not p.empty) for p in _params(fn, skip_self=True)]
    real_pairs = [(p.name, p.default is not p.empty) for p in _params(real)]
    assert not compatible(as_pairs, real_pairs), f"{where}: {compatible(as_pairs, real_pairs)}"


def test_the_fakes_constants_and_errors_are_pynvmls():
    copied = [n for n in vars(fake_pynvml) if n.startswith(("NVML_", "nvmlClocksEventReason"))]
    assert len(copied) > 20
    for name in copied:
        assert getattr(pynvml, name) == getattr(fake_pynvml, name), name
    errors = [n for n in vars(fake_pynvml) if n.startswith("NVMLError_")]
    for name in errors:
        code = getattr(fake_pynvml, name)._code
        assert type(pynvml.NVMLError(code)).__name__ == name, name


def _names_called(pattern: str) -> set[str]:
    """Names matching `pattern` the package's code uses (attributes, getattr strings)."""
    found = set()
    for path in (REPO / "src" / "joulebench").rglob("*.py"):
        if "sim" in path.relative_to(REPO / "src").parts[:3]:
            continue  # the simulator's fake is checked above
        for node in ast.walk(ast.parse(path.read_text())):
            text = node.attr if isinstance(node, ast.Attribute) else getattr(node, "value", None)
            if isinstance(text, str) and re.fullmatch(pattern, text):
                found.add(text)
    return found


def test_every_nvml_function_the_code_calls_is_pynvmls():
    called = _names_called(r"nvml(Init|Shutdown|System[A-Z]\w*|Device[A-Z]\w*)")
    assert {"nvmlDeviceGetTotalEnergyConsumption", "nvmlDeviceGetMigMode"} <= called
    assert not sorted(n for n in called if not hasattr(pynvml, n))


def test_the_compatibility_rule_catches_a_mismatch():
    assert compatible([("handle", False)], [("handle", False), ("x", True)]) == ""
    assert "parameters" in compatible([("device", False)], [("handle", False)])
    assert "also needs" in compatible([("handle", False)], [("handle", False), ("x", False)])


# ------------------------------------------------------------------ amdsmi


def _real_amdsmi_dir() -> Path:
    """The installed amdsmi package's folder (found by its metadata, never imported)."""
    try:
        dist = importlib.metadata.distribution("amdsmi")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(
            "amdsmi is not installed here (pip install amdsmi==6.4.3, the dev extra: a "
            "pure-Python wheel on PyPI); the AMD SMI fake cannot be checked against it"
        )
    init = next(f for f in dist.files if str(f).replace("\\", "/") == "amdsmi/__init__.py")
    return Path(dist.locate_file(init)).parent


def _module(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


def _functions(tree: ast.Module) -> dict[str, list[tuple[str, bool]]]:
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            args = node.args.args
            defaults = [False] * (len(args) - len(node.args.defaults)) + [True] * len(
                node.args.defaults
            )
            out[node.name] = list(zip([a.arg for a in args], defaults, strict=True))
    return out


def _classes(tree: ast.Module) -> dict[str, list[str]]:
    """class name -> the names assigned in its body (an enum's members)."""
    return {
        node.name: [t.id for s in node.body if isinstance(s, ast.Assign) for t in s.targets]
        for node in tree.body
        if isinstance(node, ast.ClassDef)
    }


def _wrapper_ints(tree: ast.Module) -> dict[str, int]:
    """The integer constants of amdsmi_wrapper (AMDSMI_CLK_TYPE_GFX = 0, ...)."""
    return {
        s.targets[0].id: s.value.value
        for s in tree.body
        if isinstance(s, ast.Assign)
        and isinstance(s.targets[0], ast.Name)
        and isinstance(s.value, ast.Constant)
        and isinstance(s.value.value, int)
    }


def _load_fake():
    spec = importlib.util.spec_from_file_location("fake_amdsmi_api", FAKE_AMDSMI)
    module = importlib.util.module_from_spec(spec)
    sys.modules["fake_amdsmi_api"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_each_fake_amdsmi_function_is_amdsmis():
    real = _functions(_module(_real_amdsmi_dir() / "amdsmi_interface.py"))
    exported = _module(_real_amdsmi_dir() / "__init__.py")
    public = {a.name for n in exported.body if isinstance(n, ast.ImportFrom) for a in n.names}
    fake = _functions(_module(FAKE_AMDSMI))
    implemented = [name for name in fake if name.startswith("amdsmi_")]
    assert len(implemented) >= 15
    for name in implemented:
        assert name in real and name in public, f"amdsmi has no {name}"
        assert not compatible(fake[name], real[name]), (
            f"{name}: {compatible(fake[name], real[name])}"
        )


ENUMS = ("AmdSmiInitFlags", "AmdSmiTemperatureType", "AmdSmiTemperatureMetric", "AmdSmiClkType")


def _member_constant(interface: str, enum: str, member: str) -> str:
    """The amdsmi_wrapper constant the interface assigns to `enum.member`."""
    body = interface[interface.index(f"class {enum}(") :]
    return re.search(rf"\n    {member} = amdsmi_wrapper\.(\w+)", body)[1]


def test_the_fake_amdsmi_enums_and_errors_are_amdsmis():
    folder = _real_amdsmi_dir()
    classes = _classes(_module(folder / "amdsmi_interface.py"))
    errors = _classes(_module(folder / "amdsmi_exception.py"))
    ints = _wrapper_ints(_module(folder / "amdsmi_wrapper.py"))
    interface = (folder / "amdsmi_interface.py").read_text()
    fake = _load_fake()
    for name in ("AmdSmiException", "AmdSmiLibraryException", "AmdSmiParameterException"):
        assert name in errors, name
    for enum in (
        "AmdSmiInitFlags",
        "AmdSmiTemperatureType",
        "AmdSmiTemperatureMetric",
        "AmdSmiClkType",
    ):
        for member in getattr(fake, enum).__members__.values():
            assert member.name in classes[enum], f"{enum}.{member.name}"
            # the member's value: the wrapper constant the interface assigns it
            constant = re.search(
                rf"\n    {member.name} = amdsmi_wrapper\.(\w+)",
                interface[interface.index(f"class {enum}(") :],
            )
            assert ints[constant[1]] == member.value, f"{enum}.{member.name}"
    for member in fake.AmdSmiStatus:  # the status codes of AmdSmiLibraryException
        assert ints[f"AMDSMI_STATUS_{member.name}"] == member.value, member.name


# ------------------------------------------------------------------ torch.cuda's graph API

GRAPH_API = (  # (where in torch.cuda, skip the first parameter: self or cls)
    ("CUDAGraph.__new__", True),
    ("CUDAGraph.capture_begin", True),
    ("CUDAGraph.capture_end", True),
    ("CUDAGraph.replay", True),
    ("CUDAGraph.reset", True),
    ("graph.__init__", True),
    ("Stream.wait_stream", True),
    ("stream", False),
    ("current_stream", False),
    ("synchronize", False),
    ("empty_cache", False),
)


def _attr(root, dotted: str):
    for part in dotted.split("."):
        root = getattr(root, part)
    return root


def _named(fn, skip_self: bool) -> list[tuple[str, bool]]:
    """(name, has a default) of the parameters a call may name (not *args / **kwargs)."""
    varargs = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    params = [p for p in _params(fn, skip_self) if p.kind not in varargs]
    return [(p.name, p.default is not p.empty) for p in params]


@pytest.mark.parametrize(("where", "skip_self"), GRAPH_API, ids=[w for w, _ in GRAPH_API])
def test_each_fake_cuda_graph_function_is_torchs(where, skip_self):
    """tests/helpers/fake_cuda_graphs.py against torch 2.14's torch.cuda (importable
    without a GPU): the same names, with parameters a call to the fake would also pass."""
    import torch
    from helpers import fake_cuda_graphs

    fake = _named(_attr(fake_cuda_graphs, where), skip_self)
    real = _named(_attr(torch.cuda, where), skip_self)
    assert fake == real, f"{where}: the fake's {fake}, torch's {real}"


def test_the_fake_streams_constructor_is_torchs():
    import torch
    from helpers import fake_cuda_graphs

    fake = _named(fake_cuda_graphs.Stream.__init__, skip_self=True)
    assert fake == _named(torch.cuda.Stream.__new__, skip_self=True)


def test_every_torch_cuda_name_the_capture_code_uses_is_faked_and_real():
    """Each `cuda.<name>` core/cuda_graphs.py reaches (and each method it calls on what
    they return) is one the fake implements and torch.cuda has."""
    import torch
    from helpers import fake_cuda_graphs

    tree = _module(REPO / "src" / "joulebench" / "core" / "cuda_graphs.py")
    used = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "cuda"
    }
    assert {"CUDAGraph", "graph", "Stream", "stream", "current_stream", "synchronize"} <= used
    for name in used:
        assert hasattr(fake_cuda_graphs, name) and hasattr(torch.cuda, name), name
    for method in ("replay", "wait_stream"):  # graph.replay(), stream.wait_stream(...)
        owner = "CUDAGraph" if method == "replay" else "Stream"
        assert hasattr(_attr(torch.cuda, owner), method)
        assert hasattr(_attr(fake_cuda_graphs, owner), method)
