"""Reading and writing tables: atomically, with one-line errors that name the file.

Every stage writes through `write_table` / `atomic_write`: a temp file in the same folder,
then a rename, so a killed run never leaves a half-written file and Snakemake resumes from
what exists (a temp file a killed write left is removed by the next write of that file).
`read_table` reads a parquet or CSV table and says why one cannot be read (missing, a
folder, damaged, not UTF-8) instead of a traceback. The columns each table must have are
declared in `joulebench.tables`; this module imports no joulebench module. The map of the
package: docs/design.md.
"""

from __future__ import annotations

import errno
import glob
import os
import shlex
import stat
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd


def empty_frame(columns: dict[str, str]) -> pd.DataFrame:
    """A zero-row frame with the declared dtypes."""
    return pd.DataFrame({c: pd.Series(dtype=d) for c, d in columns.items()})


def conform(df: pd.DataFrame, columns: dict[str, str]) -> pd.DataFrame:
    """Order and type `df` by the contract; a missing column is an error, not a silent NaN."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"table lacks declared columns: {missing}")
    extra = [c for c in df.columns if c not in columns]
    if extra:
        raise ValueError(f"table has undeclared columns: {extra}")
    out = df[list(columns)].copy()
    for col, dtype in columns.items():
        if dtype != "object":
            out[col] = out[col].astype(dtype)
    return out.reset_index(drop=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# Temp files older than this process were left by a write that was killed (kill -9, a node
# lost): nobody will rename them, so the next write of the same file removes them.
_PROCESS_START = time.time()


def remove_stale_temps(path: str | os.PathLike) -> list[Path]:
    """Delete the temp files that interrupted writes of `path` left behind (`.<name>.*.tmp`
    made before this process started); returns what was removed."""
    path = Path(path)
    removed = []
    for tmp in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        try:
            if tmp.stat().st_mtime < _PROCESS_START:
                tmp.unlink()
                removed.append(tmp)
        except FileNotFoundError:
            pass  # gone meanwhile
    return removed


class WriteError(OSError):
    """A file that cannot be written (read-only folder, full disk, a folder in its place);
    the message names the file and why, in one line."""


def atomic_write(path: str | os.PathLike, write: Callable[[str], object]) -> Path:
    """Write a file atomically: `write(tmp)` fills a temp file in the same folder, which then
    replaces `path` (so readers see the old file or the new one, never half of one). An OS
    error is a WriteError naming `path` (not the temp file)."""
    path = Path(path)
    _check_writable(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temps(path)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as err:
        raise WriteError(f"cannot write {path}: {_os_reason(err)}") from None
    os.close(fd)
    try:
        write(tmp)
        # mkstemp makes the file private (0600); results get the usual permissions.
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise WriteError(f"cannot write {path}: {_os_reason(err)}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def check_writable(path: str | os.PathLike) -> None:
    """Raise WriteError now where `path` could not be written later (a folder, a file where
    its folder would be): long commands ask before they spend minutes measuring."""
    _check_writable(Path(path))


def _check_writable(path: Path) -> None:
    """WriteError when `path` is a folder, something that is not a regular file (a device
    such as /dev/null, a FIFO, a socket: the rename would replace it with a file), or a file
    stands where its folder would be (the OS would say only "File exists")."""
    if path.is_dir():
        raise WriteError(f"cannot write {path}: it is a folder; give a file path")
    special = _special_kind(path)
    if special:
        raise WriteError(f"cannot write {path}: it is {special}, not a file; give a file path")
    for folder in path.parents:
        if folder.exists():
            if not folder.is_dir():
                raise WriteError(f"cannot write {path}: {folder} is a file, not a folder")
            return


_SPECIAL_KINDS = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)


def _special_kind(path: Path) -> str:
    """What stands at `path` (through links) if it is neither a regular file nor a folder;
    "" where nothing does or it is a file."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return ""  # missing (or unreadable): the write itself says why
    return next((kind for test, kind in _SPECIAL_KINDS if test(mode)), "")


def _os_reason(err: OSError) -> str:
    """An OS error in words, without the file names it carries (the caller names the file);
    pyarrow's own errors (e.g. a full disk) say it in their first line."""
    return err.strerror or str(err).splitlines()[0]


def write_table(df: pd.DataFrame, path: str | os.PathLike, columns: dict[str, str] | None = None):
    """Write a parquet (or .csv) atomically: temp file in the same folder, then rename."""
    path = Path(path)
    if columns is not None:
        df = conform(df, columns)
    if path.suffix == ".csv":
        atomic_write(path, lambda tmp: df.to_csv(tmp, index=False))
    else:
        atomic_write(path, lambda tmp: df.to_parquet(tmp, index=False))


class TableError(ValueError):
    """A table that cannot be read; the message names the file and what to do."""


def read_table(path: str | os.PathLike) -> pd.DataFrame:
    """A parquet (or .csv) table; TableError naming the file if it is not one, or is damaged."""
    path = Path(path)
    _check_readable(path)
    if path.suffix == ".csv":
        return _read_csv(path)
    import pyarrow as pa

    try:
        return pd.read_parquet(path)
    except (pa.ArrowException, OSError) as err:
        kind = "truncated or damaged" if _looks_parquet(path) else "not a parquet file"
        hint = "" if path.suffix == ".parquet" else " (a summary may also be a .csv)"
        raise TableError(f"{path}: {kind}{hint}: {str(err).splitlines()[0]}") from None


def _check_readable(path: Path) -> None:
    """TableError saying why `path` is no file to read: missing, a folder, a symlink loop,
    no permission (each in its own words, never all as "no such file")."""
    try:
        if path.is_dir():
            raise TableError(f"{path}: is a folder, not a table file")
        with open(path, "rb"):
            pass
    except FileNotFoundError:
        raise TableError(f"no such file: {path}") from None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise TableError(f"{path}: a symbolic link loop (it points back at itself)") from None
        raise TableError(f"{path}: cannot read: {_os_reason(err)}") from None


def _read_csv(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(path)
    except UnicodeDecodeError as err:
        raise TableError(_encoding_problem(path, err)) from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise TableError(f"{path}: not a readable CSV table: {err}") from None


def _encoding_problem(path: Path, err: UnicodeDecodeError) -> str:
    """What a CSV that is not UTF-8 holds (UTF-16 by its byte-order mark or NUL bytes, else
    a one-byte code page) and the command that converts it."""
    with open(path, "rb") as fh:
        head = fh.read(4096)
    if head[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in head:
        kind, source = "UTF-16 text (as Excel's Unicode text saves it)", "utf-16"
    else:
        kind = f"not UTF-8 text (it holds the byte {err.object[err.start]:#04x})"
        source = "latin1"
    return (
        f"{path}: {kind}. Save it as UTF-8, e.g. iconv -f {source} -t utf-8 {_sh(path)} > utf8.csv"
    )


def _looks_parquet(path: Path) -> bool:
    """A parquet file starts with the magic bytes PAR1 (and ends with them, when whole)."""
    with open(path, "rb") as fh:
        return fh.read(4) == b"PAR1"


def _sh(path: Path) -> str:
    return shlex.quote(str(path))
