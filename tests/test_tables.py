"""Reading tables: a file that is not one, or is damaged, is named with what to do."""

from __future__ import annotations

import os
import re

import pandas as pd
import pytest

from joulebench.cli import main
from joulebench.table_io import TableError, WriteError, atomic_write, read_table, write_table
from joulebench.tables import CATALOG_COLUMNS, PROFILE_COLUMNS


def test_latin1_csv_is_one_clear_error(tmp_path):
    path = tmp_path / "summary.csv"
    path.write_bytes("model,top1\nr\xe9snet,70\n".encode("latin-1"))
    with pytest.raises(TableError, match=r"not UTF-8 text .*0xe9.*iconv -f latin1 -t utf-8"):
        read_table(path)


@pytest.mark.parametrize("name", ["summary.parquet", "summary.xlsx"])
def test_a_file_that_is_no_parquet(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(b"PK\x03\x04 this is a spreadsheet, not a table")
    with pytest.raises(TableError, match=f"{name}: not a parquet file"):
        read_table(path)


def test_truncated_parquet_and_missing_file(tmp_path):
    whole = tmp_path / "whole.parquet"
    pd.DataFrame({"a": range(1000)}).to_parquet(whole)
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(whole.read_bytes()[:300])
    with pytest.raises(TableError, match="cut.parquet: truncated or damaged"):
        read_table(cut)
    with pytest.raises(TableError, match="no such file"):
        read_table(tmp_path / "none.parquet")


def test_concat_names_every_damaged_part_and_how_to_redo_it(tmp_path, capsys):
    rows = tmp_path / "profile" / "cpu" / "rows"
    good = rows / "resnet18.a1_in1k.parquet"
    write_table(pd.DataFrame(columns=list(PROFILE_COLUMNS)), good, PROFILE_COLUMNS)
    bad = rows / "my model's.parquet"
    bad.write_bytes(good.read_bytes()[:40])
    code = main(
        ["concat", "profile", "--output", str(tmp_path / "p.parquet"), "--", str(good), str(bad)]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert f"{bad}: truncated or damaged" in err
    assert "the next run measures those models again" in err
    assert f"rm '{rows}/my model'\"'\"'s.parquet'" in err
    assert not (tmp_path / "p.parquet").exists()


def test_a_utf16_csv_is_named_as_such(tmp_path):
    """Excel's "Unicode text" is UTF-16: the hint must convert from UTF-16, not latin1."""
    path = tmp_path / "summary.csv"
    pd.DataFrame({"model": ["résnet"], "top1": [70.0]}).to_csv(path, encoding="utf-16")
    with pytest.raises(TableError) as err:
        read_table(path)
    assert "UTF-16 text" in str(err.value)
    assert f"iconv -f utf-16 -t utf-8 {path} > utf8.csv" in str(err.value)
    assert "latin1" not in str(err.value)


def test_a_folder_and_a_symlink_loop_are_not_called_missing(tmp_path):
    folder = tmp_path / "summary.parquet"
    folder.mkdir()
    with pytest.raises(TableError, match=f"^{folder}: is a folder, not a table file$"):
        read_table(folder)
    loop = tmp_path / "loop.parquet"
    loop.symlink_to(tmp_path / "back.parquet")
    (tmp_path / "back.parquet").symlink_to(loop)
    with pytest.raises(TableError, match=f"^{loop}: a symbolic link loop"):
        read_table(loop)


def test_writing_over_a_folder_names_the_path(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    part = tmp_path / "part.parquet"
    write_table(pd.DataFrame(columns=list(CATALOG_COLUMNS)), part, CATALOG_COLUMNS)
    assert main(["concat", "catalog", "--output", str(out), "--", str(part)]) == 2
    err = capsys.readouterr().err
    assert err == f"joulebench: error: cannot write {out}: it is a folder; give a file path\n"
    assert list(out.iterdir()) == []


def test_write_errors_are_one_line_naming_the_path_and_leave_nothing(tmp_path):
    """A full disk (ENOSPC, as /dev/full gives it) and a file where the folder should be."""
    target = tmp_path / "results" / "scores.parquet"

    def fill_the_disk(tmp):
        with open("/dev/full", "wb") as full:
            full.write(b"x" * 65536)
            full.flush()

    with pytest.raises(WriteError, match=f"^cannot write {target}: No space left on device$"):
        atomic_write(target, fill_the_disk)
    assert list(target.parent.iterdir()) == []  # the temp file is gone
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    with pytest.raises(WriteError, match=f"^cannot write {blocked}/x.parquet: {blocked} is a file"):
        write_table(pd.DataFrame({"a": [1]}), blocked / "x.parquet")


def _specials(tmp_path):
    """A FIFO and a link to /dev/null (a link: were the check missing, the rename would
    replace the link, never the machine's /dev/null)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    null = tmp_path / "null"
    null.symlink_to("/dev/null")
    return {fifo: "a FIFO (named pipe)", null: "a character device"}


def test_a_device_or_a_fifo_is_never_replaced_by_a_write(tmp_path):
    """Issue 40 item 1: `-o /dev/null` turned /dev/null into a regular file."""
    for path, kind in _specials(tmp_path).items():
        with pytest.raises(WriteError, match=f"^cannot write {path}: it is {re.escape(kind)}"):
            write_table(pd.DataFrame({"a": [1]}), path)
        assert not path.is_file() and (path.is_fifo() or path.is_symlink())
        assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize("command", ["score", "best-configs", "webapp", "concat", "profile"])
def test_every_output_option_refuses_a_device_before_any_work(tmp_path, capsys, command):
    """The check runs before the command does (a profile would measure for minutes first)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    args = {
        "score": ["score", "none.parquet"],
        "best-configs": ["best-configs", "none.parquet"],
        "webapp": ["webapp", "--summary", "none.parquet", "--scores", "none.parquet"],
        "concat": ["concat", "catalog", "none.parquet"],
        "profile": ["profile", "resnet18.a1_in1k", "--repeats", "1"],
    }[command]
    assert main([*args, "--output", str(fifo)]) == 2
    err = capsys.readouterr().err
    kind = "it is a FIFO (named pipe), not a file; give a file path"
    assert err == f"joulebench: error: cannot write {fifo}: {kind}\n"
    assert fifo.is_fifo()


def test_the_fingerprint_column_is_each_rows_own_hashed_once_per_protocol():
    """protocol_fingerprint hashes each distinct set of fields once: the same as each row's
    fingerprint_of, NA and NaN fields, unmeasured rows and the fields' equivalences included."""
    import numpy as np

    from joulebench.tables import fingerprint_of, protocol_fingerprint

    rows = pd.DataFrame({
        "status": ["ok", "ok", "invalid", "failed", "ok", "ok", None],
        "device_name": ["H100", "H100", "H100", "H100", pd.NA, "A100", "A100"],
        "power_limit_w": [700.0, 700.0004, np.nan, 700.0, 400.0, np.nan, 400.0],
        "cuda_graphs": [True, True, False, True, pd.NA, False, False],
        "board_factor_source": ["fitted", "reference", None, "fitted", "", "fitted", ""],
    }).astype({"device_name": "string", "cuda_graphs": "boolean"})  # fmt: skip
    got = protocol_fingerprint(rows)
    assert got.tolist() == [fingerprint_of(r) for r in rows.to_dict("records")]
    assert got[0] == got[1] != ""  # 700.0004 W rounds to 700.0; fitted reads as reference
    assert got[3] == got[6] == "" and got[2] not in ("", got[0])
    assert protocol_fingerprint(rows.iloc[:0]).tolist() == []
