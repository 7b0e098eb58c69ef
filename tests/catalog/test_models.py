"""Model selection: exact names, bare architectures, globs, all-pretrained, errors."""

import json

import pytest
import timm

from joulebench.catalog.models import (
    ModelSelectionError,
    chunk,
    exact_names,
    resolve_models,
    split_name,
)


def test_exact_name_with_tag_is_kept():
    assert resolve_models(["resnet50.a1_in1k"]) == ["resnet50.a1_in1k"]


def test_exact_names_need_no_registry_and_agree_with_it():
    entries = [
        "resnet50.a1_in1k",
        " convnext_atto.d2_in1k",
        "mine=tests/workloads/tiny_net.py:build",
    ]
    assert exact_names(entries) == ["resnet50.a1_in1k", "convnext_atto.d2_in1k", "mine"]
    assert exact_names(entries) == resolve_models(entries)
    assert exact_names(["resnet50.a1_in1k", "resnet50.a1_in1k"]) == ["resnet50.a1_in1k"]
    for needs_timm in ("resnet50", "convnext_*", "all-pretrained", "convnext_tiny_in22ft1k"):
        assert exact_names(["resnet50.a1_in1k", needs_timm]) is None, needs_timm


def test_bare_architecture_gets_timm_default_tag():
    default = timm.models.get_pretrained_cfg("resnet50").tag
    assert resolve_models(["resnet50"]) == [f"resnet50.{default}"]


def test_architecture_without_weights_stays_bare():
    arch = next(a for a in timm.list_models() if not timm.list_pretrained(a + ".*"))
    assert resolve_models([arch]) == [arch]


def test_glob_matches_pretrained_weights():
    names = resolve_models(["convnext_atto*"])
    assert names == timm.list_pretrained("convnext_atto*")
    assert "convnext_atto.d2_in1k" in names and all(n.startswith("convnext_atto") for n in names)


def test_deprecated_name_resolves_to_its_new_name():
    assert resolve_models(["convnext_tiny_in22ft1k"]) == ["convnext_tiny.fb_in22k_ft_in1k"]


def test_all_pretrained_is_every_weight():
    names = resolve_models(["all-pretrained"])
    assert names == timm.list_pretrained()
    assert len(names) > 1500


def test_duplicates_dropped_order_kept():
    names = resolve_models(["resnet18.a1_in1k", "convnext_atto.d2_in1k", "resnet18.a1_in1k"])
    assert names == ["resnet18.a1_in1k", "convnext_atto.d2_in1k"]


def test_unknown_name_names_entry_and_suggests():
    with pytest.raises(ModelSelectionError) as err:
        resolve_models(["resnet18.a1_in1k", "resnet5O"])
    message = str(err.value)
    assert "'resnet5O'" in message
    assert "resnet50" in message.split("Closest valid names:")[1]


def test_unknown_tag_suggests_tags_of_that_architecture():
    with pytest.raises(ModelSelectionError) as err:
        resolve_models(["convnext_atto.d2_in1kk"])
    assert "convnext_atto.d2_in1k" in str(err.value)


def test_every_bad_entry_is_reported_at_once():
    with pytest.raises(ModelSelectionError) as err:
        resolve_models(["nosuchnet", "zzz_*"])
    message = str(err.value)
    assert "'nosuchnet'" in message and "'zzz_*' glob matches no timm model" in message


def test_split_name():
    assert split_name("resnet50.a1_in1k") == ("resnet50", "a1_in1k")
    assert split_name("resnet50") == ("resnet50", "")


def test_chunk():
    assert chunk(list("abcde"), 2) == [["a", "b"], ["c", "d"], ["e"]]
    with pytest.raises(ValueError):
        chunk(["a"], 0)


def test_custom_workloads_resolve_to_their_names():
    entries = [
        "resnet18.a1_in1k",
        "tests/workloads/tiny_net.py:build",
        "x=tests/workloads/tiny_net.py:build",
    ]
    assert resolve_models(entries) == ["resnet18.a1_in1k", "tiny_net.build", "x"]
    with pytest.raises(ModelSelectionError, match="file not found"):
        resolve_models(["tests/workloads/missing.py:build"])


def test_an_entry_that_reads_as_an_option_is_refused():
    with pytest.raises(ModelSelectionError) as err:
        resolve_models(["--help=models/m.py:f", "-resnet18", "resnet18"])
    assert str(err.value).splitlines() == [
        "models: '--help=models/m.py:f' starts with '-': no model name does",
        "models: '-resnet18' starts with '-': no model name does",
    ]


# --- timm's names, kept between runs ------------------------------------------------------

ENTRIES = ["resnet50", "resnet50.a1_in1k", "convnext_tiny_in22ft1k", "convnext_atto"]
RESOLVE = (
    "import sys, json; from joulebench.catalog.models import resolve_models; "
    f"print(json.dumps([resolve_models({ENTRIES!r}), 'timm' in sys.modules]))"
)


def test_timm_names_are_kept_per_version_and_a_fresh_process_resolves_without_timm(
    tmp_path, monkeypatch
):
    """A Snakemake run (its Snakefile resolves the study's models) or `joulebench plan`
    needs no import of timm, and so of torch (seconds), where the names are kept: the first
    process that imports timm to resolve writes them anew over a file that is no list of
    names; the next one reads them."""
    import os
    import subprocess
    import sys

    from conftest import REPO

    from joulebench.catalog.models import CACHE_ENV, names_cache

    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    assert names_cache() == tmp_path / f"timm-{timm.__version__}-names.json"
    names_cache().write_text('{"pretrained": "not a list"}')
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    runs = [
        subprocess.run([sys.executable, "-c", RESOLVE], capture_output=True, text=True, env=env)
        for _ in range(2)
    ]
    expected = resolve_models(ENTRIES)
    assert [json.loads(r.stdout) for r in runs] == [[expected, True], [expected, False]], [
        r.stderr[-2000:] for r in runs
    ]


def test_a_name_the_kept_names_lack_is_asked_of_timm(tmp_path, monkeypatch):
    """A model registered with timm after the names were kept (a plugin, a test's tiny
    model) still resolves; a glob always reads timm's own registry."""
    from joulebench.catalog import models

    monkeypatch.setenv(models.CACHE_ENV, str(tmp_path))
    kept = models._live_names()
    kept["pretrained"].remove("resnet18.a1_in1k")
    kept["archs"] = [a for a in kept["archs"] if not a.startswith("convnext")]
    models.names_cache().write_text(json.dumps(kept))
    assert resolve_models(["resnet18.a1_in1k"]) == ["resnet18.a1_in1k"]
    assert "convnext_atto.d2_in1k" in resolve_models(["convnext_atto*"])


def test_names_kept_where_timm_was_imported_already_are_not_written(tmp_path, monkeypatch):
    """This process imported timm before (and may have registered models of its own, as the
    tests' tiny models): what it resolves is not kept for another process."""
    from joulebench.catalog.models import CACHE_ENV, names_cache

    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    assert resolve_models(["resnet50.a1_in1k"]) == ["resnet50.a1_in1k"]
    assert not names_cache().exists()


@pytest.mark.parametrize(
    "kept",
    ["", "not json", "[]", '{"pretrained": "resnet50.a1_in1k"}', '{"pretrained": [1]}'],
)
def test_kept_names_that_are_not_names_are_ignored(tmp_path, monkeypatch, kept):
    from joulebench.catalog.models import CACHE_ENV, names_cache

    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    names_cache().write_text(kept)
    default = timm.models.get_pretrained_cfg("resnet50").tag
    assert resolve_models(["resnet50"]) == [f"resnet50.{default}"]


def test_a_cache_folder_that_cannot_be_written_costs_only_time(tmp_path):
    from joulebench.catalog.models import _write_names

    blocker = tmp_path / "file"
    blocker.write_text("")
    _write_names(blocker / "sub" / "names.json", {"pretrained": []})  # a folder under a file
    assert blocker.read_text() == ""
