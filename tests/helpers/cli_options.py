"""Every subcommand of `joulebench` with each of its options, as plain data: what a change to
the command line must keep (tests/cli/test_cli.py compares it with tests/data/cli_options.json).

After changing an option on purpose, write the file again:
    .venv/bin/python tests/helpers/cli_options.py > tests/data/cli_options.json
"""

from __future__ import annotations

import argparse
import json


def _type(kind) -> str | None:
    """An option's type by name; a range-checked one (cli's `number`) with its range."""
    if kind is None:
        return None
    code = getattr(kind, "__code__", None)
    cells = dict(zip(code.co_freevars, kind.__closure__ or (), strict=True)) if code else {}
    if "kind" not in cells:
        return kind.__name__
    bounds = {k: c.cell_contents for k, c in sorted(cells.items()) if k != "kind"}
    shown = ", ".join(f"{k}={v}" for k, v in bounds.items() if v is not None)
    return f"{cells['kind'].cell_contents.__name__}[{shown}]"


def _option(action: argparse.Action) -> dict:
    return {
        "flags": list(action.option_strings),
        "dest": action.dest,
        "action": type(action).__name__,
        "type": _type(action.type),
        "default": repr(action.default),
        "choices": None if action.choices is None else [str(c) for c in action.choices],
        "required": action.required,
        "nargs": repr(action.nargs),
        "metavar": repr(action.metavar),
        "help": action.help,
    }


def describe(parser: argparse.ArgumentParser) -> dict:
    """{command: {help, options: [...]}} in the order `joulebench --help` lists them."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help for c in sub._choices_actions}
    return {
        name: {
            "help": helps.get(name),
            "description": command.description,
            "options": [_option(a) for a in command._actions],
        }
        for name, command in sub.choices.items()
    }


def as_json(commands: dict) -> str:
    """JSON with one line per option, so a changed option is a one-line diff."""
    blocks = []
    for name, command in commands.items():
        options = ",\n".join(f"   {json.dumps(o)}" for o in command["options"])
        head = {k: v for k, v in command.items() if k != "options"}
        blocks.append(
            f' {json.dumps(name)}: {json.dumps(head)[:-1]}, "options": [\n{options}\n ]}}'
        )
    return "{\n" + ",\n".join(blocks) + "\n}\n"


if __name__ == "__main__":
    from joulebench.cli import build_parser

    print(as_json(describe(build_parser())), end="")
