"""Workloads that misbehave on purpose, one way each (issue 35): the profile job's
supervisor (measure.supervise) must end each with a row and go on.

`good` runs; `sleeps` never returns from its forward; `exits` ends its process; `killed` is
killed as the kernel's out-of-memory killer would (SIGKILL); `segfault` dies of SIGSEGV;
`big_batch_exits` dies only at batch sizes above 2 (its other configurations measure).
`exits_in_build` ends its process while the model is built (the catalog counts it in a
part with other models: D2), `sleeps_in_build` never returns from its build.
"""

import os
import signal
import time

from torch import nn

INPUT_SIZE = (3, 8, 8)
SPEC = {"input_size": INPUT_SIZE, "num_classes": 4}


class Net(nn.Module):
    def __init__(self, mode: str = "good"):
        super().__init__()
        self.mode = mode
        self.fc = nn.Linear(3 * 8 * 8, 4)

    def forward(self, x):
        if self.mode == "sleeps":
            time.sleep(10**9)
        elif self.mode == "exits":
            os._exit(3)
        elif self.mode == "killed":
            os.kill(os.getpid(), signal.SIGKILL)
        elif self.mode == "segfault":
            os.kill(os.getpid(), signal.SIGSEGV)
        elif self.mode == "big_batch_exits" and x.shape[0] > 2:
            os._exit(4)
        return self.fc(x.flatten(1))


def good():
    return Net(), SPEC


def sleeps():
    return Net("sleeps"), SPEC


def exits():
    return Net("exits"), SPEC


def killed():
    return Net("killed"), SPEC


def segfault():
    return Net("segfault"), SPEC


def big_batch_exits():
    return Net("big_batch_exits"), SPEC


def exits_in_build():
    os._exit(3)


def sleeps_in_build():
    time.sleep(10**9)
