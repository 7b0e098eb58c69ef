"""Names from data made safe where they land: as a file name, on a terminal, in XML.

A model name or device label comes from a config or a published summary, so it may hold
anything: `/`, `..`, NUL, escape sequences that clear a screen or set a window title, bidi
overrides that show text reversed. Every file name built from such a name goes through
`file_name`, and every such string printed to a terminal or drawn on a label through
`printable`. A count printed with its noun goes through `quantity` ("1 configuration", never
"1 configurations"). This module imports no other joulebench module, so every layer may use
it.
"""

from __future__ import annotations

import hashlib
import re

# A name used as it is: lower case (so no two names share a file on a case-insensitive file
# system), no separator, not hidden, not an option, no '~' (only changed names have one).
ORDINARY_NAME = re.compile(r"[a-z0-9_][a-z0-9_.\-]*")
MAX_NAME_CHARS = 100
HASH_CHARS = 8  # hex digits of sha256 after '~' in a changed name
_WINDOWS_DEVICES = frozenset(
    ["con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))]
)


def is_ordinary(name: str) -> bool:
    """True when `name` is its own file name (file_name leaves it as it is)."""
    return (
        len(name) <= MAX_NAME_CHARS
        and ORDINARY_NAME.fullmatch(name) is not None
        and not name.endswith(".")
        and name.split(".", 1)[0] not in _WINDOWS_DEVICES
    )


def file_name(name: str) -> str:
    """`name` as one path component of every file system: itself when ordinary (today's file
    names stay), else its unsafe characters replaced by '_', cut, and '~' + a short hash of
    the original added, so two distinct names never share a file (not even ignoring case)."""
    name = str(name)
    if is_ordinary(name):
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_CHARS]
    kept = re.sub(r"[^A-Za-z0-9_.\-]", "_", name)[: MAX_NAME_CHARS - HASH_CHARS - 1]
    kept = re.sub(r"^[.\-]", "_", kept) or "_"
    return f"{kept}~{digest}"


def printable(text: object, *, newlines: bool = False) -> str:
    """`text` with every character str.isprintable calls unprintable (C0 and C1 controls,
    DEL, bidi overrides and other format characters, line separators, surrogates,
    noncharacters) shown as its visible escape (ESC as `\\x1b`, RLO as `\\u202e`): it can
    neither drive a terminal nor break XML, and a reader sees that something was there.
    With `newlines`, line breaks and tabs stay (for a message of several lines)."""
    text = str(text)
    if text.isprintable():
        return text
    keep = "\n\t" if newlines else ""
    return "".join(
        ch if ch.isprintable() or ch in keep else ch.encode("unicode_escape").decode("ascii")
        for ch in text
    )


def quantity(count: int, noun: str, plural: str | None = None) -> str:
    """`count` and its noun, singular for one: "1 configuration", "1,200 configurations"
    (`plural` where adding an s is wrong)."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"
