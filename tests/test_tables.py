"""Reading tables: a file that is not one, or is damaged, is named with what to do."""

from __future__ import annotations

import pandas as pd
import pytest

from joulebench.cli import main
from joulebench.tables import PROFILE_COLUMNS, TableError, read_table, write_table


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
