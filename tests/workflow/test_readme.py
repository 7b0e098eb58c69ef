"""The README's commands work exactly as written, from a shell with nothing activated.

Every shell command in README.md's code blocks is either run here verbatim (in a fresh
copy of the repository, `env -i PATH=/usr/bin:/bin`: no venv on PATH) or named in SKIPPED
with the reason, so a new README command is run unless someone says why it cannot be.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from helpers.figure_study import study_tables

README = REPO / "README.md"
FENCE = re.compile(r"^```(\w*)\s*$")
SHELLS = {"bash", "sh", "shell", "console"}

# Skipped by design, with the reason (each must still be in the README).
SKIPPED = {
    "make run": "the default study end to end takes 7-20 min here (quiet or busy); "
    "test_workflow runs the same workflow on a tiny study, and docs/benchmarks.md records a "
    "full `make run`",
    "make test": "the test suite itself",
    ".venv/bin/snakemake --configfile studies/hidden-joules.yaml --cores all": "the full "
    "study: ~1,800 models on a GPU for days (test_plan checks its plan)",
    ".venv/bin/snakemake --configfile studies/hidden-joules.yaml --profile profiles/slurm": "needs "
    "a SLURM cluster with GPUs; tests/workflow/test_slurm.py runs a tiny study through this "
    "profile",
    ".venv/bin/snakemake --cores all --configfile my-study.yaml": "my-study.yaml stands for "
    "the reader's own study file",
    ".venv/bin/snakemake --cores all --configfile studies/anytime-cpu.yaml": "30 models "
    "measured and predicted, 6-24 min here; docs/benchmarks.md records its run, test_selection "
    "and test_predict its parts, test_workflow the predict rule on a tiny study",
    ".venv/bin/joulebench merge --output merged release .": "merges the release the README's "
    "command before it publishes (each command here runs in a clone of its own); "
    "tests/analysis/test_release.py merges runs, releases and summaries",
}
# Run where an NVIDIA GPU is visible, skipped elsewhere.
NEEDS_GPU = {
    ".venv/bin/joulebench profile resnet50.a1_in1k --device cuda --method fp16-amp --batch-size 64",
    ".venv/bin/joulebench check --device cuda:0",  # test_check runs the CPU check via the CLI
}


def readme_commands(text: str | None = None) -> list[str]:
    """Shell commands of the README's bash/sh code blocks, one per line (`\\` joined),
    comment lines and blank lines left out; each command with its trailing comment."""
    text = README.read_text() if text is None else text
    commands, in_shell, in_block, pending = [], False, False, ""
    for line in text.splitlines():
        fence = FENCE.match(line.strip())
        if fence:
            in_block = not in_block
            in_shell = in_block and fence[1] in SHELLS
            continue
        if not in_shell:
            continue
        line = pending + line.strip()
        if line.endswith("\\"):
            pending = line[:-1].rstrip() + " "
            continue
        pending = ""
        if line and not line.startswith("#"):
            commands.append(line)
    return commands


def key(command: str) -> str:
    """The command without its trailing comment, spaces collapsed."""
    return " ".join(re.sub(r"\s+#.*$", "", command).split())


COMMANDS = readme_commands()


def gpu_visible() -> bool:
    import torch

    return torch.cuda.is_available()


def test_commands_are_extracted_with_comments_and_continuations():
    text = "a\n```bash\nmake run    # the study\n# a note\n\nx --a \\\n  --b\n```\n```\nnot me\n```"
    assert readme_commands(text) == ["make run    # the study", "x --a --b"]
    assert key("make run    # the study") == "make run"


def test_every_readme_command_is_run_or_skipped_by_name():
    keys = {key(c) for c in COMMANDS}
    assert set(SKIPPED) <= keys, set(SKIPPED) - keys  # no reason left for a removed command
    assert NEEDS_GPU <= keys, NEEDS_GPU - keys
    run = [key(c) for c in COMMANDS if key(c) not in SKIPPED]
    # At least: figures from a summary, measuring one model, resolve, devices and plan.
    for needed in ("from_summary=", "joulebench profile ", "joulebench resolve ", "plan"):
        assert any(needed in c for c in run), needed


@pytest.fixture
def fresh_clone(tmp_path):
    """The repository's files (tracked and new, as git sees them) in a new folder, with the
    project's virtual environment at .venv, as a fresh clone after `make setup`."""
    if sys.prefix == sys.base_prefix:
        pytest.skip("the tests do not run in a virtual environment: no .venv to use")
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    clone = tmp_path / "joulebench"
    for name in filter(None, files.split("\0")):
        source = REPO / name
        if source.is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, clone / name)
    (clone / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    home = tmp_path / "home"
    home.mkdir()
    # Inputs the commands name: a published summary at results/summary.parquet.
    from joulebench.analysis.summary import write_summary

    write_summary(study_tables(n_models=8)[0], clone / "results" / "summary.parquet")
    return clone, home


def check_output(command: str, clone: Path, out: str) -> None:
    """What each kind of command must have made or said, beyond exiting 0."""
    if "from_summary=" in command:
        assert (clone / "results" / "webapp" / "index.html").is_file()
        assert (clone / "results" / "figures" / "accuracy_vs_energy.png").is_file()
        assert "joulebench: done." in out and "Most accurate model per energy band" in out
    if "joulebench publish " in command:
        assert (clone / "release" / "SHA256SUMS").is_file() and "release -> release" in out
    if "joulebench recommend " in command:
        assert "ranked by energy per image" in out and "mJ/image" in out
    if "joulebench profile " in command:
        assert "mJ/image" in out and " ok " in out
    if "joulebench resolve " in command:
        assert "resnet50.a1_in1k" in out
    if "joulebench devices" in command:
        assert "devices: auto picks" in out and "meter:" in out
    if "joulebench status" in command:  # a fresh clone: the default study, not started
        assert "joulebench status of" in out and "no device has started yet" in out
    if "joulebench plan" in command:
        assert "configurations = " in out and "estimated" in out


@pytest.mark.slow
@pytest.mark.parametrize("command", [c for c in COMMANDS if key(c) not in SKIPPED], ids=key)
def test_readme_command_runs_verbatim(command, fresh_clone):
    if key(command) in NEEDS_GPU and not gpu_visible():
        pytest.skip("needs an NVIDIA GPU")
    clone, home = fresh_clone
    # The clone's .venv is the project's, installed from this checkout's src/: without
    # PYTHONDONTWRITEBYTECODE its bytecode would be written there, outside tmp_path.
    env = ["env", "-i", "PATH=/usr/bin:/bin", f"HOME={home}", f"TMPDIR={home}"]
    env += ["PYTHONDONTWRITEBYTECODE=1"]
    result = subprocess.run(
        [*env, "bash", "-c", command],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=900,
    )
    out = result.stdout + result.stderr
    assert result.returncode == 0, f"{command}\n{out[-4000:]}"
    check_output(command, clone, out)
