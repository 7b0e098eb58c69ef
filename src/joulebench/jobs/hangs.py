"""A model that hangs costs its deadline once, not at every configuration (issue 40 item 9).

A configuration that makes no progress for its deadline (supervise.deadline_s: 10 x its
estimate, at least 300 s) is stopped as a `timeout` row. Once a model has hung in a job,
its configurations left are cheap:

- each one tried runs under a **short deadline**: a fifth of its own, at least
  HUNG_FLOOR_S and twice the protocol's longest warm-up (the longest stage a healthy
  configuration has between two events), never longer than its own;
- one **not tried** where the hangs so far say it would hang too (a `not-measured` row whose
  reason names the configurations that hung): a larger batch of a method that hung, a method
  that hung twice, a batch no smaller than one at which two methods hung, and everything
  once the model hung MAX_HANGS times.

So a model that hangs at every configuration costs one deadline and at most
MAX_HANGS - 1 short ones, and one that hangs only at a huge batch still has its other
configurations measured (docs/profiling.md#when-a-model-or-a-gpu-misbehaves).
The supervisor records the hangs (job_runner) and hands them to each new worker, which
decides the same way from the same measuring order (profile.measure_configs).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

HUNG_SHARE = 0.2  # after a hang, a configuration's deadline is this share of its own...
HUNG_FLOOR_S = 120.0  # ...at least this long (twice the default warm-up's longest, 60 s)
MAX_HANGS = 3  # after this many hangs in a job, the model is not tried again


@dataclass(frozen=True)
class Hang:
    """A configuration of the job that was stopped for making no progress."""

    position: int  # in the job's measuring order
    seconds: float  # the deadline it missed


class HangRule:
    """What the hangs of a job so far decide for its configurations left.

    `configs`: (method, batch size) of each configuration in measuring order, the method
    named as its rows' label is (`bf16`, `bf16 train`), so the rule reads the same in the
    supervisor and in each worker."""

    def __init__(self, configs: list[tuple[str, int]], hangs=()):
        self.configs = [(str(m), int(b)) for m, b in configs]
        self.hangs = [h if isinstance(h, Hang) else Hang(int(h[0]), float(h[1])) for h in hangs]

    @classmethod
    def for_job(cls, job, hangs=()) -> HangRule:
        """The rule over a profile job's configurations (profile.ProfileJob)."""
        configs = job.configs()
        order = [configs[i] for i in job.measurement_order()]
        return cls([(method_label(p, m.name), b) for p, m, b in order], hangs)

    def record(self, position: int, seconds: float) -> None:
        self.hangs.append(Hang(int(position), float(seconds)))

    def label(self, position: int) -> str:
        method, batch = self.configs[position]
        return f"{method} bs{batch}"

    def _said(self, hang: Hang) -> str:
        return f"{self.label(hang.position)} hung (no progress for {hang.seconds:.0f} s)"

    def not_tried(self, position: int) -> str:
        """Why the configuration at `position` is not tried ("" where it is): the reason of
        its `not-measured` row, naming the hangs that decided it."""
        hangs = self.hangs
        if len(hangs) >= MAX_HANGS:
            said = "; ".join(self._said(h) for h in hangs)
            return f"not tried: the model hung {len(hangs)} times in this job ({said})"
        method, batch = self.configs[position]
        own = [h for h in hangs if self.configs[h.position][0] == method]
        if len(own) >= 2:
            said = "; ".join(self._said(h) for h in own)
            return f"not tried: its method hung twice ({said})"
        below = [h for h in own if self.configs[h.position][1] <= batch]
        if below:
            return f"not tried: {self._said(below[0])}, and a larger batch would too"
        methods: dict[str, Hang] = {}
        for h in hangs:
            if self.configs[h.position][1] <= batch:
                methods.setdefault(self.configs[h.position][0], h)
        if len(methods) >= 2:
            said = "; ".join(self._said(h) for h in list(methods.values())[:2])
            return f"not tried: two methods hung at a batch no larger ({said})"
        return ""

    def next_tried(self, start: int) -> int:
        """The first position from `start` on that is tried (len(configs): none is)."""
        return next(
            (p for p in range(start, len(self.configs)) if not self.not_tried(p)),
            len(self.configs),
        )

    def deadline_s(self, own_s: float, warmup_max_s: float) -> float:
        """A configuration's deadline: its own, or after a hang the short one."""
        return short_deadline_s(own_s, warmup_max_s) if self.hangs else own_s

    def first_hung(self) -> str:
        """The configuration that hung first ("" before any did)."""
        return self.label(self.hangs[0].position) if self.hangs else ""

    def as_arg(self) -> str:
        """The hangs as a worker's --hangs option's JSON: [[position, seconds], ...]."""
        return json.dumps([[h.position, h.seconds] for h in self.hangs])


def short_deadline_s(own_s: float, warmup_max_s: float) -> float:
    """A configuration's deadline once its model hung in the job: a fifth of its own, at
    least the floor and twice the longest warm-up (a stage without events), never longer."""
    return min(own_s, max(HUNG_FLOOR_S, 2 * warmup_max_s, HUNG_SHARE * own_s))


def method_label(phase: str, method: str) -> str:
    """A configuration's method as its log lines and the rule name it: the phase after the
    method where it is not inference."""
    return method if phase == "inference" else f"{method} {phase}"


def parse_hangs(text: str | None) -> list[Hang]:
    """--hangs' JSON back as hangs (none where it is not given); a ValueError (argparse's
    one-line usage error) for anything but [[position >= 0, seconds > 0], ...]."""
    given = json.loads(text) if text else []
    hangs = [Hang(int(p), float(s)) for p, s in given] if isinstance(given, list) else None
    if hangs is None or any(h.position < 0 or not 0 < h.seconds < math.inf for h in hangs):
        raise ValueError(f"not [[position, seconds], ...]: {text}")
    return hangs


def worst_case_s(deadlines_s: list[float], warmup_max_s: float) -> tuple[float, float]:
    """(before, after) this rule: the most a job of a model that hangs at every configuration
    can cost, from its configurations' deadlines alone. Before, every deadline; after, the
    longest once and the MAX_HANGS - 1 longest short ones of the others."""
    if not deadlines_s:
        return 0.0, 0.0
    ordered = sorted(deadlines_s, reverse=True)
    short = sorted((short_deadline_s(d, warmup_max_s) for d in ordered[1:]), reverse=True)
    return float(sum(deadlines_s)), ordered[0] + sum(short[: MAX_HANGS - 1])
