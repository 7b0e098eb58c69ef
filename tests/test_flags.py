"""The flags registry (joulebench.flags): every flag any module writes declared once, with a
producer grep can find; the helpers every module joins, splits and tests flags with; old
spellings still read; the score's defaults and the page's metadata taken from it."""

from __future__ import annotations

import ast
import inspect
import re
import warnings

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO
from helpers.dotted import resolve
from helpers.hand_scores import hand_row, hand_summary

from joulebench import flags as F
from joulebench.analysis.score import DEFAULT_INVALID_FLAGS, score_summary
from joulebench.analysis.summary import build_summary, read_summary, write_summary
from joulebench.report.webapp import page_data
from joulebench.tables import PROFILE_COLUMNS, columns_markdown

SRC = REPO / "src" / "joulebench"
ASSETS = SRC / "report" / "webapp_assets"
SCHEMA = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())


def _constants() -> dict[str, str]:
    """flags.py's FLAG_* constants: name -> value."""
    return {k: v for k, v in vars(F).items() if k.startswith("FLAG_") and isinstance(v, str)}


# ------------------------------------------------------------------ the registry


def test_every_constant_is_registered_once_and_every_flag_has_one():
    constants = _constants()
    assert sorted(constants.values()) == sorted(F.FLAGS)  # one constant per flag, no other
    for name, value in constants.items():
        assert name == "FLAG_" + value.upper().replace("-", "_"), name  # the constant is the name


def test_names_are_kebab_case_and_old_names_map_to_them():
    for flag in F.FLAGS.values():
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", flag.name), flag.name
        assert flag.meaning and flag.producer, flag
    assert F.OLD_NAMES == {
        "warmup_not_steady": "warmup-not-steady",
        "ci_target_not_met": "ci-target-not-met",
        "train_loss_not_finite": "train-loss-not-finite",
    }
    assert not set(F.OLD_NAMES) & set(F.FLAGS)


@pytest.mark.parametrize("name", list(F.FLAGS))
def test_every_producer_exists_and_names_the_flags_constant(name):
    """grep finds where a flag is set: each producer's source names the flag's constant."""
    constant = next(k for k, v in _constants().items() if v == name)
    for dotted in F.FLAGS[name].producer:
        assert dotted.startswith("joulebench."), dotted
        producer = resolve(dotted)
        assert callable(producer), dotted
        assert re.search(rf"\b{constant}\b", inspect.getsource(producer)), (
            f"{name}: {constant} not named in {dotted}"
        )


def test_a_producer_that_does_not_name_its_flag_is_caught():
    source = inspect.getsource(resolve("joulebench.core.meters.estimate.EstimateMeter.end"))
    assert re.search(r"\bFLAG_ESTIMATE\b", source)
    assert not re.search(r"\bFLAG_MIG\b", source)


def test_a_bad_flag_is_refused():
    for name in ("Has-Caps", "a;b", ""):
        with pytest.raises(ValueError, match="lower-case"):
            F.Flag(name, "x", False, ("joulebench.flags.join_flags",))
    with pytest.raises(ValueError, match="no producer"):
        F.Flag("fine", "x", False, ())


def test_docs_columns_lists_every_flag():
    text = columns_markdown()
    section = text[text.index("\n## Flags\n") :]
    for flag in F.FLAGS.values():
        yes = "yes" if flag.invalidates else "no"
        assert f"| `{flag.name}` | {flag.meaning} | {yes} |" in section, flag.name
    for old, new in F.OLD_NAMES.items():
        assert f"`{old}` as `{new}`" in section
    assert (REPO / "docs" / "columns.md").read_text() == text


# ------------------------------------------------------------------ every flag written is one


def _strings(node) -> list[str]:
    """Non-empty string literals: the node itself, or the elements of a list, tuple or set."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value:
        return [node.value]
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return [s for e in node.elts for s in _strings(e)]
    if isinstance(node, ast.Starred):
        return _strings(node.value)
    return []


def _says_flag(node) -> bool:
    return "flag" in ast.unparse(node).lower()


def _written_values(node) -> list:
    """The expressions `node` writes into flags (or looks for in them), if it does."""
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        on_flags = isinstance(func, ast.Attribute) and _says_flag(func.value)
        values = [k.value for k in node.keywords if k.arg and "flag" in k.arg]
        if name in ("join_flags", "add_flag", "has_flag", "first_flag"):
            values += node.args
        elif name in ("append", "extend", "add", "insert") and on_flags:
            values += node.args
        return values
    if isinstance(node, ast.Dict):
        return [
            v
            for k, v in zip(node.keys, node.values, strict=True)
            if isinstance(k, ast.Constant) and isinstance(k.value, str) and "flag" in k.value
        ]
    if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign) and node.value is not None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [node.value] if any(_says_flag(t) for t in targets) else []
    if isinstance(node, ast.Compare) and any(isinstance(o, ast.In | ast.NotIn) for o in node.ops):
        return [node.left] if any(_says_flag(c) for c in node.comparators) else []
    return []


def flag_literals(source: str) -> list[tuple[int, str]]:
    """(line, text) of each string literal a module writes into flags, or looks for in them:
    every flag must come from a constant of joulebench.flags."""
    tree = ast.parse(source)
    # {"flags": "_score_flags"} as rename(columns=...) renames the column: it writes no flag
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    renames = {id(k.value) for n in calls for k in n.keywords if k.arg == "columns"}
    found = []
    for node in ast.walk(tree):
        if id(node) not in renames or not isinstance(node, ast.Dict):
            found += [(node.lineno, s) for v in _written_values(node) for s in _strings(v)]
    return found


def _separator_uses(source: str) -> list[int]:
    """Lines that join or split on `;` by hand (flags.join_flags / split_flags do)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        joins = node.func.attr == "join" and isinstance(node.func.value, ast.Constant)
        if joins and node.func.value.value == ";":
            lines.append(node.lineno)
        first = node.args[0] if node.args else None
        splits = node.func.attr == "split" and isinstance(first, ast.Constant)
        if splits and first.value == ";":
            lines.append(node.lineno)
    return lines


def _modules():
    for path in sorted(SRC.rglob("*.py")):
        if path != SRC / "flags.py":
            yield path.relative_to(REPO), path.read_text()


def test_no_module_writes_a_flag_as_a_literal():
    """Every flag a row can carry is a registered constant: none is spelled in place, and
    no FLAG_ constant is declared outside joulebench/flags.py."""
    found = [
        f"{path}:{line}: {text!r}" for path, src in _modules() for line, text in flag_literals(src)
    ]
    assert not found, "\n".join(found)
    declared = [
        f"{path}: {m.group(0)}"
        for path, src in _modules()
        for m in re.finditer(r"^FLAG_[A-Z0-9_]+\s*=", src, flags=re.M)
    ]
    assert not declared, "declare flags in joulebench/flags.py:\n" + "\n".join(declared)


def test_the_literal_scan_finds_each_way_of_writing_one():
    source = """
flags.append("mig")
flags = ["warmup_not_steady", FLAG_X]
row = {"flags": "other-process"}
reading.flags = [*reading.flags, "other-load"]
FLAG_NEW = "spread-above-sensor"
if "process-check-failed" in meter.current_flags(): pass
join_flags(x, ["emulated"])
Verdict(flag="emulated")
df.rename(columns={"flags": "_score_flags"})
"""
    found = sorted(text for _, text in flag_literals(source))
    assert found == sorted(
        [
            "mig",
            "warmup_not_steady",
            "other-process",
            "other-load",
            "spread-above-sensor",
            "process-check-failed",
            "emulated",
            "emulated",
        ]
    )
    clean = 'flags.append(FLAG_MIG)\nrow["flags"] = join_flags(row["flags"], extra)\n'
    assert flag_literals(clean) == []


def test_no_module_joins_or_splits_flags_by_hand():
    found = [f"{path}:{line}" for path, src in _modules() for line in _separator_uses(src)]
    assert not found, "use joulebench.flags.join_flags / split_flags:\n" + "\n".join(found)
    assert _separator_uses('x = ";".join(a)\ny = t.split(";")\nz = "; ".join(r)\n') == [1, 2]


def test_the_page_script_spells_no_flag_and_no_separator():
    """The page reads flags from its metadata (flags.page_meta), never its own list."""
    names = [*F.FLAGS, *F.OLD_NAMES]
    for path in sorted(ASSETS.glob("*.js")):
        text = path.read_text()
        spelled = [n for n in names if re.search(rf"""["'`]{re.escape(n)}["'`]""", text)]
        assert not spelled, (path.name, spelled)
        assert not re.search(r"""split\(\s*["'`];["'`]\s*\)""", text), path.name


# ------------------------------------------------------------------ the helpers


def test_split_join_and_has():
    assert F.split_flags(" a; b;;a ") == ["a", "b"]
    for empty in (None, "", pd.NA, np.nan, float("nan")):
        assert F.split_flags(empty) == []
    assert F.join_flags("a;b", ["c", "a"], None, "", ["b;d"]) == "a;b;c;d"
    assert F.join_flags() == "" and F.join_flags([]) == ""
    assert F.has_flag("other-load;mig", "mig") and not F.has_flag("other-load", "other")
    assert not F.has_flag(None, "mig")


def test_add_flag_adds_once_where_asked():
    flags = pd.Series(["a", None, "b;c", "", "c"], dtype="string")
    out = F.add_flag(flags, [True, True, False, True, True], "c")
    assert out.tolist() == ["a;c", "c", "b;c", "c", "c"]
    assert str(out.dtype) == "string"
    assert F.add_flag(flags.iloc[:0], [], "c").tolist() == []


def test_first_flag_follows_the_rows_order():
    flags = pd.Series(["x;mig;other-load", "other-load;mig", None, "x"], index=[3, 1, 2, 0])
    got = F.first_flag(flags, ["mig", "other-load"])
    assert got.tolist() == ["mig", "other-load", "", ""] and list(got.index) == [3, 1, 2, 0]


def test_canonical_flags_reads_old_names_and_keeps_the_rest():
    flags = pd.Series(["warmup_not_steady; ci_target_not_met", "a; b", None, ""], dtype="string")
    got = F.canonical_flags(flags)
    assert got.iloc[0] == "warmup-not-steady;ci-target-not-met"
    assert got.iloc[1] == "a; b"  # no old name: as it was
    assert got.isna().tolist() == [False, False, True, False]


def test_canonical_names_maps_a_configs_old_names_with_a_note():
    with pytest.warns(UserWarning, match="train_loss_not_finite -> train-loss-not-finite"):
        got = F.canonical_names(["mig", "train_loss_not_finite", "train-loss-not-finite"])
    assert got == ("mig", "train-loss-not-finite")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert F.canonical_names(list(F.INVALIDATING)) == F.INVALIDATING  # no note


# ------------------------------------------------------------------ defaults and old names


def test_the_default_invalid_flags_are_the_registrys():
    invalidating = tuple(f.name for f in F.FLAGS.values() if f.invalidates)
    assert DEFAULT_INVALID_FLAGS == F.INVALIDATING == invalidating
    schema = SCHEMA["properties"]["score"]["properties"]["invalid_flags"]["default"]
    assert tuple(schema) == invalidating  # which rows count: one section, the score's
    assert {"other-process", "mig", "other-load", "high-spread", "simulated"} == set(invalidating)


def test_a_published_summary_with_old_names_reads_with_new_ones(tmp_path):
    summary = hand_summary()
    old = "warmup_not_steady;ci_target_not_met;train_loss_not_finite"
    summary.loc[summary["model"] == "m1", "flags"] = old
    summary.loc[summary["model"] == "m2", "flags"] = "other-load"
    for name in ("summary.parquet", "summary.csv"):
        write_summary(summary, tmp_path / name)
        read = read_summary(tmp_path / name).set_index("model")["flags"]
        assert read["m1"] == "warmup-not-steady;ci-target-not-met;train-loss-not-finite"
        assert read["m2"] == "other-load"


def test_profile_parts_with_old_names_are_summarised_with_new_ones():
    rows = [hand_row("m1", 0.01, flags="ci_target_not_met"), hand_row("m2", 0.02)]
    profile = pd.DataFrame(rows).reindex(columns=list(PROFILE_COLUMNS))
    flags = build_summary(profile).set_index("model")["flags"]
    assert flags["m1"] == "ci-target-not-met" and flags["m2"] == ""


def test_an_old_name_in_invalid_flags_still_keeps_the_row_off_the_front():
    row = hand_row("flagged", 0.001, flags="warmup-not-steady")
    summary = hand_summary([row], top1={"flagged": 99.0})
    with pytest.warns(UserWarning, match="warmup_not_steady -> warmup-not-steady"):
        scores = score_summary(summary, invalid_flags=["warmup_not_steady"])
    row = scores.set_index("model").loc["flagged"]
    assert not row["scored"] and row["score_note"] == "flagged warmup-not-steady: not scored"
    default = score_summary(summary).set_index("model").loc["flagged"]
    assert default["scored"] and default["on_front"]  # not invalidating by default


# ------------------------------------------------------------------ the page's metadata


def test_the_page_embeds_the_registry():
    data = page_data(hand_summary(), score_summary(hand_summary()))
    meta = data["meta"]["flags"]
    assert meta == F.page_meta()
    assert meta["separator"] == F.SEPARATOR and meta["ci_clipped"] == F.FLAG_CI_CLIPPED
    assert [f["name"] for f in meta["known"]] == list(F.FLAGS)
    assert {f["name"] for f in meta["known"] if f["invalidates"]} == set(F.INVALIDATING)
    assert all(f["meaning"] == F.FLAGS[f["name"]].meaning for f in meta["known"])
