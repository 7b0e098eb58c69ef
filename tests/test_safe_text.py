"""Names from data made safe: as file names (never outside their folder, never two names on one
file, ordinary names unchanged) and as terminal text (no sequence reaches the terminal), and the
places that build file names or print route through joulebench.safe_text."""

from __future__ import annotations

import ast
import re

import pytest
from conftest import REPO

from joulebench.safe_text import MAX_NAME_CHARS, file_name, is_ordinary, printable

# Today's file names: timm names, device labels, check report stems.
ORDINARY = [
    "resnet18.a1_in1k",
    "vit_base_patch16_clip_224.openai_ft_in12k_in1k",
    "mobilenetv3_small_100.lamb_in1k",
    "cpu",
    "h200-0",
    "cuda0",
    "simh100",
    "a" * MAX_NAME_CHARS,
]
HOSTILE = [
    "/elsewhere/x",
    "../../x",
    "..",
    ".",
    "a/b",
    "a\\b",
    "C:\\x",
    "a\x00b",
    "",
    " ",
    "x" * 300,
    "x" * 299 + "y",
    "-rf",
    ".hidden",
    "~root",
    "con",
    "NUL.txt",
    "lpt1",
    "a.",
    "MyNet",
    "mynet~0123abcd",
    "a b",
    "a:b",
    "a\nb",
    "a\u202eb",
    "naïve",
    "名前",
    "\udcff",
]


@pytest.mark.parametrize("name", ORDINARY)
def test_ordinary_names_keep_their_file_names(name):
    assert is_ordinary(name) and file_name(name) == name


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_name_is_one_plain_file_inside_its_folder(name, tmp_path):
    safe = file_name(name)
    assert safe != name and not is_ordinary(safe)  # changed names never look ordinary
    assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*~[0-9a-f]{8}", safe), safe
    assert len(safe) <= MAX_NAME_CHARS and file_name(name) == safe  # short; the same each time
    path = tmp_path / f"{safe}.svg"
    path.write_text("x")
    assert path.resolve().parent == tmp_path.resolve()


def test_no_two_names_share_a_file_not_even_ignoring_case(tmp_path):
    unsafe_only = ["a/b", "a\\b", "a:b", "a b", "a\x00b", "a?b", "a*b", "a_b"]  # all 'a_b'-like
    case_only = ["mynet", "MyNet", "MYNET", "myNet"]
    names = sorted(set(ORDINARY + HOSTILE + unsafe_only + case_only))
    safe = [file_name(n) for n in names]
    assert len({s.casefold() for s in safe}) == len(names)
    for s in safe:  # on this file system, too
        (tmp_path / f"{s}.svg").write_text(s)
    assert len(list(tmp_path.iterdir())) == len(names)


TERMINAL_ATTACKS = {
    "clear screen (CSI)": "\x1b[2J\x1b[H",
    "window title (OSC)": "\x1b]0;owned\x07",
    "fake link (OSC 8)": "\x1b]8;;https://evil.example\x1b\\resnet50\x1b]8;;\x1b\\",
    "carriage return": "good\rEVIL",
    "backspace": "abc\x08\x08\x08xyz",
    "8-bit CSI (C1)": "\x9b2J",
    "DEL": "a\x7fb",
    "NUL": "a\x00b",
    "bidi override (RLO)": "model\u202egnp.exe",
    "bidi isolate (RLI, PDI)": "a\u2067b\u2069",
    "line separator": "a\u2028b",
    "lone surrogate": "a\udcffb",
    "newline": "a\nfake line",
}


@pytest.mark.parametrize("attack", TERMINAL_ATTACKS.values(), ids=TERMINAL_ATTACKS.keys())
def test_terminal_text_shows_every_sequence_as_its_escape(attack):
    shown = printable(attack)
    assert shown.isprintable()  # nothing a terminal would act on, nothing invisible
    assert shown.encode("utf-8")  # printable as UTF-8 (a lone surrogate is not)
    bad = [ch for ch in attack if not ch.isprintable()]
    assert all(ch.encode("unicode_escape").decode() in shown for ch in bad)  # e.g. \x1b
    assert printable(shown) == shown


def test_several_lines_keep_their_breaks_and_nothing_else():
    text = "device gpu:\n  \x1b]0;t\x07model\r\tfp32\n"
    assert printable(text, newlines=True) == "device gpu:\n  \\x1b]0;t\\x07model\\r\tfp32\n"
    assert printable("résumé · ± 名前 ◀") == "résumé · ± 名前 ◀"  # ordinary text unchanged


def _calls(path, name: str) -> list[int]:
    tree = ast.parse(path.read_text())
    return [
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
    ]


def test_the_command_line_prints_only_through_printable():
    modules = sorted((REPO / "src" / "joulebench" / "cli").glob("*.py"))
    assert len(modules) >= 4
    prints = {path.name: len(_calls(path, "print")) for path in modules}
    assert prints == {path.name: int(path.name == "common.py") for path in modules}  # say
    source = (REPO / "src" / "joulebench" / "cli" / "common.py").read_text()
    assert "print(printable(text, newlines=True)" in source


def test_the_workflow_prints_its_messages_through_printable():
    snakefile = (REPO / "Snakefile").read_text()
    prints = re.findall(r"print\((.*)\)", snakefile)
    assert prints and all(p.startswith(("printable(", '"')) for p in prints), prints


def test_file_names_built_from_names_go_through_file_name(tmp_path, monkeypatch):
    from joulebench.accuracy.measured import _in_checkpoints
    from joulebench.check.report import report_path
    from joulebench.jobs.concurrency import NodeMeasurements

    assert report_path("cuda:0", tmp_path) == tmp_path / "cuda0.json"  # today's name
    assert report_path("../../x", tmp_path).parent == tmp_path
    assert report_path("/elsewhere/x", tmp_path).parent == tmp_path
    marker = NodeMeasurements("../../x", tmp_path / "running")
    assert marker.path.parent == tmp_path / "running" and "/" not in marker.path.name
    outside = tmp_path / "x.safetensors"
    outside.write_bytes(b"")
    (tmp_path / "ckpt").mkdir()
    assert _in_checkpoints("../x", tmp_path / "ckpt") is None  # never read outside the folder
    (tmp_path / "ckpt" / "resnet18.a1_in1k.safetensors").write_bytes(b"")
    assert _in_checkpoints("resnet18.a1_in1k", tmp_path / "ckpt").name.startswith("resnet18")


def test_a_count_of_one_takes_the_singular():
    from joulebench.safe_text import quantity

    assert quantity(1, "configuration") == "1 configuration"
    assert quantity(0, "configuration") == "0 configurations"
    assert quantity(1200, "configuration") == "1,200 configurations"
    assert quantity(2, "batch size") == "2 batch sizes"
    assert quantity(3, "index", "indices") == "3 indices"


def test_no_printed_count_says_1_configurations():
    """A count printed before a plural noun in an f-string goes through `quantity` (or says
    its singular beside it: `== 1`)."""
    plural = re.compile(r"\{[^{}]+\} (configurations|models|rows|methods|figures)\b")
    found = []
    for path in sorted((REPO / "src" / "joulebench").rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if 'f"' in line and plural.search(line) and "== 1" not in line:
                found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)
