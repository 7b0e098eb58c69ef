"""Which part of a model one profile job measures: the whole model, or one of its methods.

A pool's GPUs share whole model jobs, so with few models the pool waits on the last ones:
3 models on 2 GPUs take 2 jobs in a row against 3, 2/3 of the time at best. Split by
method, each of a model's methods (a key of the config's `methods:`, its sweep included) is
a job of its own, which any free GPU of the pool takes. Each job starts a process and loads
the model, so a long study (many models per GPU) keeps whole models.

`profile: {split: auto | model | method}`: `auto` splits a pool's jobs by method where the
study has fewer than AUTO_MODELS_PER_GPU models per GPU of the pool; `model` never splits,
`method` always does (where there are two methods or more). A job's key names its files
(results/profile/<device>/rows/<key>.parquet, its log): the model, or `model+method`
(neither a model name nor a method key may hold a `+`: the workflow's and the schema's
patterns).
"""

from __future__ import annotations

from joulebench.config_schema import default

PART_MARK = "+"
SPLITS = ("auto", "model", "method")
DEFAULT_SPLIT = default("profile.split")
# Below this many models per GPU, whole-model jobs leave GPUs of a pool idle at the end for
# a large share of the run (with 4 or more, at most about 1/8 of it on average)
AUTO_MODELS_PER_GPU = 4


def job_key(model: str, method: str | None = None) -> str:
    """The key of a model's job, or of one method's part of it."""
    if PART_MARK in model or (method is not None and PART_MARK in method):
        raise ValueError(
            f"a model or method name may not hold {PART_MARK!r}: {model!r}, {method!r}"
        )
    return model if method is None else f"{model}{PART_MARK}{method}"


def parse_job_key(key: str) -> tuple[str, str | None]:
    """(model, method or None) of a job key (a rows file's or a log's stem)."""
    model, mark, method = key.partition(PART_MARK)
    return model, (method if mark else None)


def job_methods(split: str, models: int, gpus: int, methods: list[str]) -> list[str | None]:
    """What each of a model's jobs measures on a device (or pool): [None], the whole model,
    or its methods one by one (see the module doc); never split with one method, where the
    part would be the whole model."""
    if split not in SPLITS:
        raise ValueError(f"profile split must be one of {SPLITS}, not {split!r}")
    if len(methods) < 2 or split == "model":
        return [None]
    if split == "method" or (gpus > 1 and models < AUTO_MODELS_PER_GPU * gpus):
        return list(methods)
    return [None]


def job_keys(models: list[str], parts: list[str | None]) -> list[str]:
    """Every job's key, model by model (`parts`: job_methods)."""
    return [job_key(m, part) for m in models for part in parts]
