"""timm's reference accuracy: the pinned tables, the (tag, img_size) join, offline behaviour."""

from __future__ import annotations

import io
import math
import urllib.error
from pathlib import Path

import pandas as pd
import pytest

from joulebench.accuracy import reference
from joulebench.accuracy.reference import TABLES, ReferenceWarning
from joulebench.tables import ACCURACY_COLUMNS

REPO_TABLES = (
    Path(__file__).resolve().parents[2] / "src" / "joulebench" / "accuracy" / "reference_data"
)
DEFAULT_MODELS = {  # the default study: reference top-1 at the model's own input size
    "resnet18.a1_in1k": 71.504,
    "mobilenetv3_small_100.lamb_in1k": 67.636,
    "efficientnet_b0.ra_in1k": 77.698,
    "deit_tiny_patch16_224.fb_in1k": 72.190,
    "convnext_atto.d2_in1k": 75.672,
}


def input_size(model: str) -> int:
    from timm.models import get_pretrained_cfg

    return get_pretrained_cfg(model).input_size[-1]


@pytest.fixture(scope="module")
def shared_tables():
    """The default source: the copy shipped in the package (the repository's own files)."""
    return reference.load_tables()


def test_every_default_model_gets_its_reference_top1(shared_tables):
    models = list(DEFAULT_MODELS)
    sizes = {m: input_size(m) for m in models}
    assert set(sizes.values()) == {224}
    catalog = pd.DataFrame({"model": models + ["broken.x"], "input_height": [224] * 5 + [None]})
    assert reference.img_sizes_from_catalog(catalog) == sizes | {"broken.x": None}
    rows = reference.reference_accuracy(models, sizes, shared_tables).set_index("model")
    assert rows.top1.to_dict() == DEFAULT_MODELS
    assert (rows.accuracy_source == "reference").all()
    assert rows.accuracy_dataset.str.contains("results-imagenet.csv").all()
    resnet = rows.loc["resnet18.a1_in1k"]
    assert (resnet.top5, resnet.top1_real, resnet.top1_v2) == (90.086, 79.450, 59.320)
    assert resnet.img_size == 224


def test_missing_model_or_size_is_nan_with_a_reason(shared_tables):
    models = ["resnet18.not_a_tag", "resnet18.a1_in1k", "convnext_atto.d2_in1k"]
    sizes = {"resnet18.not_a_tag": 224, "resnet18.a1_in1k": 256, "convnext_atto.d2_in1k": 288}
    rows = reference.reference_accuracy(models, sizes, shared_tables)
    assert list(rows.columns) == list(ACCURACY_COLUMNS)
    rows = rows.set_index("model")
    assert rows.loc["resnet18.not_a_tag"].accuracy_source == "none"
    assert math.isnan(rows.loc["resnet18.not_a_tag"].top1)
    assert "not in timm's results-imagenet.csv" in rows.loc["resnet18.not_a_tag"].accuracy_note
    # A different resolution is a different accuracy: no fallback to the nearest size.
    at_256 = rows.loc["resnet18.a1_in1k"]
    assert at_256.accuracy_source == "none" and math.isnan(at_256.top1)
    assert "img_size 224, 288, not 256" in at_256.accuracy_note
    assert rows.loc["convnext_atto.d2_in1k"].top1 == 77.016  # its published 288 row


def test_shipped_copy_is_the_pinned_files_with_their_origin():
    """The repository ships timm's three files byte for byte, with sha256 and license."""
    source = (REPO_TABLES / "SOURCE.md").read_text()
    assert reference.TIMM_COMMIT in source and "Apache" in source
    assert "Apache License" in (REPO_TABLES / "LICENSE-timm").read_text()
    for spec in TABLES.values():
        data = (REPO_TABLES / spec.file).read_bytes()
        assert reference.sha256_of(data) == spec.sha256
        assert f"`{spec.sha256}`" in source  # the note states every full hash
    # The installed package finds them too: they are package data, not the ignored data/.
    assert '"reference_data/*"' in (REPO_TABLES.parents[3] / "pyproject.toml").read_text()
    assert Path(str(reference.shipped_dir())) == REPO_TABLES


@pytest.fixture
def no_network(monkeypatch):
    def urlopen(*args, **kwargs):
        raise AssertionError("tried to use the network")

    monkeypatch.setattr(reference.urllib.request, "urlopen", urlopen)


def test_the_default_is_the_shipped_copy_offline(tmp_path, no_network, recwarn):
    tables = reference.load_tables(tmp_path / "cache")
    assert tables.origin == "timm@aa4b585, shipped copy"
    assert tables.notes == {} and not recwarn.list
    assert {name: len(frame) for name, frame in tables.frames.items()} == {
        name: 1556 for name in TABLES
    }
    assert not (tmp_path / "cache").exists()  # nothing fetched, nothing cached
    row = reference.reference_accuracy(["resnet18.a1_in1k"], {"resnet18.a1_in1k": 224}, tables)
    assert row.accuracy_dataset.item() == (
        "results-imagenet.csv (timm@aa4b585, shipped copy; ImageNet-1k val, 50000 images)"
    )


def test_a_changed_shipped_copy_is_not_used(tmp_path, monkeypatch, no_network):
    for spec in TABLES.values():
        (tmp_path / spec.file).write_bytes((REPO_TABLES / spec.file).read_bytes())
    text = (tmp_path / TABLES["imagenet"].file).read_text()
    (tmp_path / TABLES["imagenet"].file).write_text(text.replace("71.504", "79.999"))
    monkeypatch.setattr(reference, "shipped_dir", lambda: tmp_path)
    with pytest.warns(ReferenceWarning, match="the copy was changed"):
        tables = reference.load_tables()
    assert tables.frames["imagenet"] is None and tables.frames["imagenetv2"] is not None
    row = reference.reference_accuracy(["resnet18.a1_in1k"], {"resnet18.a1_in1k": 224}, tables)
    assert row.accuracy_source.item() == "none" and math.isnan(row.top1.item())
    assert "the copy was changed" in row.accuracy_note.item()
    assert row.top1_v2.item() == 59.32  # the untouched tables still serve

    (tmp_path / TABLES["imagenet"].file).write_text(text)
    (tmp_path / TABLES["imagenetv2"].file).unlink()
    with pytest.warns(ReferenceWarning, match="missing from this joulebench install"):
        assert reference.load_tables().frames["imagenetv2"] is None


def test_every_default_study_model_gets_its_top1_through_the_catalog():
    """The real join: config.yaml's models, the catalog's input sizes, the shipped tables."""
    import yaml

    from joulebench.catalog.build import build_catalog

    config = yaml.safe_load((REPO_TABLES.parents[3] / "config.yaml").read_text())
    assert set(config["models"]) == set(DEFAULT_MODELS)
    catalog = build_catalog(config["models"], log=lambda s: None)
    sizes = reference.img_sizes_from_catalog(catalog)
    rows = reference.reference_accuracy(config["models"], sizes, reference.load_tables())
    rows = rows.set_index("model")
    assert (rows.accuracy_source == "reference").all(), rows.accuracy_note.to_dict()
    assert rows.top1.to_dict() == DEFAULT_MODELS


def serve(monkeypatch, body=None, error=None):
    """Replace urlopen: serve the repository's file named by the URL, `body`, or raise `error`."""
    asked = []

    def urlopen(url, timeout=None):
        asked.append(url)
        assert timeout is not None and timeout <= 30
        if error is not None:
            raise error
        name = url.rsplit("/", 1)[-1]
        return io.BytesIO(body if body is not None else (REPO_TABLES / name).read_bytes())

    monkeypatch.setattr(reference.urllib.request, "urlopen", urlopen)
    return asked


def test_fetch_verifies_and_caches_atomically(tmp_path, monkeypatch):
    asked = serve(monkeypatch)
    cache = tmp_path / "data" / "reference"
    (cache).mkdir(parents=True)
    (cache / TABLES["imagenet"].file).write_text("half a file from a killed run")
    paths, notes = reference.fetch_tables(cache)
    assert notes == {}
    assert len(asked) == 3 and all(reference.TIMM_COMMIT in url for url in asked)
    assert all(url.startswith("https://raw.githubusercontent.com/") for url in asked)
    for name, spec in TABLES.items():
        assert paths[name] == cache / spec.file
        assert reference.sha256_of(paths[name].read_bytes()) == spec.sha256
    assert sorted(p.name for p in cache.iterdir()) == sorted(s.file for s in TABLES.values())

    asked.clear()  # cached and verified: no second download
    assert reference.fetch_tables(cache)[0] == paths and asked == []
    tables = reference.load_tables(cache, commit=reference.TIMM_COMMIT)
    assert tables.origin == "timm@aa4b585, fetched"
    rows = reference.reference_accuracy(["resnet18.a1_in1k"], {"resnet18.a1_in1k": 224}, tables)
    assert rows.top1.item() == 71.504 and "timm@aa4b585" in rows.accuracy_dataset.item()


def test_checksum_mismatch_warns_and_leaves_accuracy_missing(tmp_path, monkeypatch):
    serve(monkeypatch, body=b"model,img_size,top1\nresnet18.a1_in1k,224,99.9\n")
    with pytest.warns(ReferenceWarning, match="sha256"):
        tables = reference.load_tables(tmp_path, commit=reference.TIMM_COMMIT)
    assert all(frame is None for frame in tables.frames.values())
    assert not list(tmp_path.iterdir())  # nothing unverified is cached
    row = reference.reference_accuracy(["resnet18.a1_in1k"], {"resnet18.a1_in1k": 224}, tables)
    assert row.accuracy_source.item() == "none" and math.isnan(row.top1.item())
    assert "unavailable" in row.accuracy_note.item()


def test_offline_warns_and_leaves_accuracy_missing(tmp_path, monkeypatch):
    serve(monkeypatch, error=urllib.error.URLError("Temporary failure in name resolution"))
    with pytest.warns(ReferenceWarning, match="could not fetch") as caught:
        paths, notes = reference.fetch_tables(tmp_path)
    assert len(caught) == 3 and set(notes) == set(TABLES)
    assert all(p is None for p in paths.values())
    assert "reference.local_dir" in notes["imagenet"]
    with pytest.warns(ReferenceWarning, match="offline"):
        assert reference.fetch_tables(tmp_path, offline=True)[0]["imagenet"] is None


def test_a_local_folder_is_used_and_a_changed_copy_is_flagged(tmp_path):
    tables = reference.load_tables(local_dir=REPO_TABLES)
    assert tables.notes == {} and tables.origin == str(REPO_TABLES)
    assert tables.sha256 == {name: spec.sha256 for name, spec in TABLES.items()}
    assert len(tables.frames["imagenet"]) == 1556
    # param_count has thousands separators ("1,013.01"): read as numbers
    assert tables.frames["imagenet"].param_count.dtype.kind == "f"

    edited = tmp_path / "mine"
    edited.mkdir()
    text = (REPO_TABLES / TABLES["imagenet"].file).read_text()
    (edited / TABLES["imagenet"].file).write_text(text.replace("71.504", "71.600"))
    with pytest.warns(ReferenceWarning) as caught:
        mine = reference.load_tables(local_dir=edited)
    assert any("not the pinned" in str(w.message) for w in caught)
    assert any("not in" in str(w.message) for w in caught)  # the two other files are absent
    row = reference.reference_accuracy(["resnet18.a1_in1k"], {"resnet18.a1_in1k": 224}, mine)
    assert row.top1.item() == 71.6 and math.isnan(row.top1_real.item())
    assert "not the pinned file" in row.accuracy_dataset.item()  # said in the data, too


def test_another_commit_is_fetched_into_its_own_folder_and_flagged(tmp_path, monkeypatch):
    other = "0123456789abcdef0123456789abcdef01234567"
    text = (REPO_TABLES / TABLES["imagenet"].file).read_text()
    asked = serve(monkeypatch, body=text.replace("71.504", "71.700").encode())
    with pytest.warns(ReferenceWarning, match="not the pinned"):
        tables = reference.load_tables(tmp_path, commit=other)
    assert len(asked) == 3 and all(f"/{other}/results/" in url for url in asked)
    assert sorted(p.name for p in (tmp_path / other).iterdir()) == sorted(
        s.file for s in TABLES.values()
    )
    assert tables.origin == "timm@0123456, fetched (not the pinned commit)"
    row = reference.reference_accuracy(["resnet18.a1_in1k"], {"resnet18.a1_in1k": 224}, tables)
    assert row.top1.item() == 71.7
    assert "timm@0123456" in row.accuracy_dataset.item()
    assert "not the pinned file" in row.accuracy_dataset.item()
    asked.clear()  # cached: offline works from the cache
    with pytest.warns(ReferenceWarning):
        again = reference.load_tables(tmp_path, commit=other, offline=True)
    assert asked == [] and again.frames["imagenet"].equals(tables.frames["imagenet"])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"commit": "main"}, "40-hex-digit"),
        ({"commit": "AA4B5850C1543FA488ABF260F18390EDA46CF85D"}, "40-hex-digit"),
        ({"commit": "aa4b585"}, "40-hex-digit"),
        ({"commit": reference.TIMM_COMMIT, "local_dir": "x"}, "not both"),
    ],
)
def test_bad_reference_settings_are_refused(kwargs, message, no_network):
    with pytest.raises(ValueError, match=message):
        reference.load_tables(**kwargs)


def _measured(model, top1, source="measured", note=""):
    row = {c: None for c in ACCURACY_COLUMNS}
    row.update(model=model, img_size=224, top1=top1, top5=top1 + 10, accuracy_source=source)
    row.update(accuracy_note=note, top1_real=math.nan, top1_v2=math.nan, accuracy_images=50)
    return row


def test_combine_prefers_measured_and_keeps_each_source(shared_tables):
    models = ["resnet18.a1_in1k", "convnext_atto.d2_in1k", "nothing.anywhere"]
    ref = reference.reference_accuracy(models, {m: 224 for m in models}, shared_tables)
    measured = pd.DataFrame(
        [
            _measured("resnet18.a1_in1k", 71.2),
            _measured("convnext_atto.d2_in1k", math.nan, "none", "no local pretrained weights"),
            _measured("nothing.anywhere", math.nan, "none", "no local pretrained weights"),
        ]
    )
    both = reference.combine(measured, ref).set_index("model")
    assert list(both.reset_index().columns) == list(ACCURACY_COLUMNS)
    resnet = both.loc["resnet18.a1_in1k"]
    assert (resnet.top1, resnet.accuracy_source, resnet.top1_real) == (71.2, "measured", 79.45)
    assert "reference top1 71.504" in resnet.accuracy_note
    convnext = both.loc["convnext_atto.d2_in1k"]
    assert (convnext.top1, convnext.accuracy_source) == (75.672, "reference")
    assert "not measured: no local pretrained weights" in convnext.accuracy_note
    nothing = both.loc["nothing.anywhere"]
    assert nothing.accuracy_source == "none" and math.isnan(nothing.top1)
    assert "not in timm's" in nothing.accuracy_note and "not measured" in nothing.accuracy_note
    assert reference.combine(None, ref).equals(ref)
