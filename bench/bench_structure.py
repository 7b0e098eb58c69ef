"""The package's shape in numbers (issue 43's before/after): lines and modules per folder,
import arrows between folders, functions with 8 or more parameters, `torch_device` outside
the backends and `backend_for(` outside the binding. Reads a source tree as text, runs
nothing of it, so an older commit's tree can be measured the same way:

    python bench/bench_structure.py [--src DIR]      # default: src/joulebench
    git archive COMMIT src | tar -x -C /tmp/old
    python bench/bench_structure.py --src /tmp/old/src/joulebench
"""

from __future__ import annotations

import argparse
import ast
import re
from collections import Counter
from pathlib import Path

MANY = 8  # parameters (self and cls not counted; *args and **kwargs counted)


def folder_of(path: Path, root: Path) -> str:
    parts = path.relative_to(root).parts
    return parts[0] if len(parts) > 1 else "(top)"


def module_name(path: Path, root: Path) -> str:
    name = ".".join(("joulebench", *path.relative_to(root).with_suffix("").parts))
    return name.removesuffix(".__init__")


def imports_of(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return {m for m in found if m.startswith("joulebench.")}


def many_parameters(tree: ast.AST) -> int:
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            a = node.args
            names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
            n = len([x for x in names if x not in ("self", "cls")])
            n += bool(a.vararg) + bool(a.kwarg)
            count += n >= MANY
    return count


def measure(root: Path) -> None:
    files = sorted(root.rglob("*.py"))
    modules = {module_name(p, root): folder_of(p, root) for p in files}
    lines, count, arrows = Counter(), Counter(), Counter()
    many = torch_device = backend_for = 0
    for path in files:
        text = path.read_text()
        folder = folder_of(path, root)
        lines[folder] += len(text.splitlines())
        count[folder] += 1
        tree = ast.parse(text)
        for target in imports_of(tree):
            other = modules.get(target)
            if other and other != folder:
                arrows[(folder, other)] += 1
        many += many_parameters(tree)
        rel = path.relative_to(root).as_posix()
        if not rel.startswith("core/backends/") and rel != "sim/backend.py":
            torch_device += len(re.findall(r"\btorch_device\b", text))
        if not rel.endswith("backends/bound.py"):
            backend_for += len(re.findall(r"\bbackend_for\(", text)) - len(
                re.findall(r"def backend_for\(", text)
            )
    print("| folder | modules | lines |")
    print("|---|---|---|")
    for folder, n in sorted(lines.items(), key=lambda kv: -kv[1]):
        print(f"| {folder} | {count[folder]} | {n:,} |")
    pairs = sorted(arrows)
    both = sorted({tuple(sorted(p)) for p in pairs if (p[1], p[0]) in arrows})
    print(f"\nimport arrows between folders: {len(pairs)}; folder pairs importing each other: "
          + (", ".join(f"{a} <-> {b}" for a, b in both) or "none"))  # fmt: skip
    print(f"functions with >= {MANY} parameters: {many}")
    print(f"`torch_device` outside the backends: {torch_device}")
    print(f"`backend_for(` calls outside the binding: {backend_for}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=Path("src/joulebench"))
    measure(parser.parse_args().src)


if __name__ == "__main__":
    main()
