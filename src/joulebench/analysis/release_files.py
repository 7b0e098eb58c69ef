"""A release folder's files, checked (issue 41): its version and every file's SHA-256.

A release (`joulebench publish`) is a folder with `release.json` (what it is, its version),
`SHA256SUMS` (`<sha256>  <path>` per file, as `sha256sum -c` reads it) and the files it
lists. Whatever reads one (joulebench.load, `--from-release`, a summary path that is a
release folder) goes through `verified_summary`: an unknown version or a file whose bytes
are not the ones listed is one line, never a table read on trust. docs/releases.md.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

RELEASE_VERSION = 1
MANIFEST = "release.json"
SUMS = "SHA256SUMS"
SUMMARY_FILE = "summary.parquet"


class ReleaseError(ValueError):
    """A release that cannot be read: the message names the folder and what is wrong."""


def is_release(path: str | Path) -> bool:
    return Path(path).is_dir() and (Path(path) / MANIFEST).is_file()


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sums_text(folder: Path, names: list[str]) -> str:
    """SHA256SUMS of `names` (paths relative to `folder`), sorted, as sha256sum writes it."""
    return "".join(f"{sha256(folder / name)}  {name}\n" for name in sorted(names))


def read_sums(folder: Path) -> dict[str, str]:
    """path -> sha256 as SHA256SUMS lists them; ReleaseError for a malformed line."""
    listed = {}
    try:
        text = (folder / SUMS).read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise ReleaseError(f"{folder}: cannot read {SUMS}: {err}") from None
    for number, line in enumerate(text.splitlines(), 1):
        digest, _, name = line.partition("  ")
        if len(digest) != 64 or not name or name.startswith("/") or ".." in Path(name).parts:
            raise ReleaseError(f"{folder}/{SUMS}: line {number} is not '<sha256>  <path>'")
        listed[name] = digest
    return listed


def verify(folder: str | Path) -> dict:
    """The release's manifest, after checking its version and every listed file's SHA-256
    (and that the manifest and the summary are listed); ReleaseError, one line, otherwise."""
    folder = Path(folder)
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError) as err:
        raise ReleaseError(f"{folder}: not a release ({MANIFEST}: {err})") from None
    version = manifest.get("release_version") if isinstance(manifest, dict) else None
    if version != RELEASE_VERSION:
        raise ReleaseError(
            f"{folder}: release version {version!r} is not one this joulebench reads "
            f"({RELEASE_VERSION}); a newer joulebench may read it"
        )
    listed = read_sums(folder)
    for needed in (MANIFEST, SUMMARY_FILE):
        if needed not in listed:
            raise ReleaseError(f"{folder}: {SUMS} does not list {needed}")
    for name, digest in listed.items():
        path = folder / name
        if not path.is_file():
            raise ReleaseError(f"{folder}: {name} is listed in {SUMS} but missing")
        if sha256(path) != digest:
            raise ReleaseError(
                f"{folder}: {name} fails its checksum (changed or damaged since it was "
                "published); get the release again"
            )
    return manifest


def verified_summary(path: str | Path) -> Path:
    """The summary file a path names: a release folder's (verified), else the path itself."""
    if is_release(path):
        verify(path)
        return Path(path) / SUMMARY_FILE
    return Path(path)
