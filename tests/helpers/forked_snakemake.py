"""`python -m snakemake ...` without an interpreter's start each time.

A Snakemake run starts an interpreter that imports Snakemake, torch, timm and the workflow's
joulebench modules (~5 s of CPU here) before it reads the Snakefile. The tests run Snakemake
some forty times, so one server process imports them once and forks a child per run: the
child is that fresh interpreter, already warm, and runs `snakemake.cli.main` with the run's
argument list, working directory and environment, its stdout and stderr in files. The
server is started from a clean `sys.executable` (never forked from pytest, which holds
threads and monkeypatched modules), and each run gets a child of its own, so no run sees
another's state. The jobs Snakemake starts are new processes, as always.

An environment that changes how an interpreter starts (PYTHON* variables: PYTHONPATH,
PYTHONHOME...) cannot apply to modules already imported: such a run gets a real
subprocess (`needs_fresh_interpreter`).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

# The server: import what every Snakemake run of this workflow imports, then fork one child
# per request line ({"argv", "env", "cwd", "out", "err"}) and answer its pid, then its exit code.
SERVER = r"""
import json, os, sys
import snakemake.cli
import timm  # imports torch
import joulebench.analysis.best_models, joulebench.plan, joulebench.prerun  # common.smk's
import joulebench.schedule.devices, joulebench.catalog.models, joulebench.cli

reply = os.fdopen(int(sys.argv[1]), "w", buffering=1)
reply.write("ready\n")
for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setsid()  # a group of its own: a timeout kills it and its jobs
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["env"])
            for fd, path in ((1, request["out"]), (2, request["err"])):
                f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.dup2(f, fd)
                os.close(f)
            sys.argv = ["snakemake", *request["argv"]]
            try:
                snakemake.cli.main(request["argv"])
                code = 0
            except SystemExit as exit:
                c = exit.code
                code = c if isinstance(c, int) else (0 if c is None else 1)
                if c is not None and not isinstance(c, int):
                    print(c, file=sys.stderr)
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
    reply.write(json.dumps({"pid": pid}) + "\n")
    _, status = os.waitpid(pid, 0)
    reply.write(json.dumps({"rc": os.waitstatus_to_exitcode(status)}) + "\n")
"""


def needs_fresh_interpreter(env: dict[str, str], started: dict[str, str]) -> bool:
    """Whether `env` changes what an interpreter imports at its start (a PYTHON* variable
    other than the server's, `started`)."""
    names = {k for k in (*env, *started) if k.startswith("PYTHON")}
    return any(env.get(k) != started.get(k) for k in names)


class ForkedSnakemake:
    """One server per test session; `run` is `subprocess.run` of `python -m snakemake`.
    The server starts (on the first run) with `environ`, the session's environment as it
    began: no test's monkeypatched variable reaches its imports."""

    def __init__(self, environ: dict[str, str], cwd: Path) -> None:
        self.environ, self._cwd = dict(environ), cwd
        self._proc: subprocess.Popen | None = None
        self._reply = None
        self._lock = threading.Lock()

    def _start(self) -> None:
        read, write = os.pipe()
        self._proc = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(write)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            pass_fds=(write,),
            env=self.environ,
            cwd=self._cwd,
        )
        os.close(write)
        self._reply = read
        if _read_line(read, 300) != "ready":
            raise RuntimeError("the Snakemake server did not start")

    def run(self, argv: list[str], env: dict[str, str], cwd: Path, timeout: float):
        cmd = [sys.executable, "-m", "snakemake", *argv]  # what the result says it ran
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._start()
            with tempfile.TemporaryDirectory() as tmp:
                out, err = Path(tmp, "stdout"), Path(tmp, "stderr")
                request = {"argv": argv, "env": env, "cwd": str(cwd), "out": str(out)}
                self._proc.stdin.write(json.dumps({**request, "err": str(err)}) + "\n")
                self._proc.stdin.flush()
                pid = json.loads(_read_line(self._reply, 60))["pid"]
                answer = _read_line(self._reply, timeout)
                if answer is None:  # as subprocess.run: the run killed, TimeoutExpired
                    _kill_group(pid)
                    _read_line(self._reply, 60)
                    raise subprocess.TimeoutExpired(cmd, timeout, out.read_text(), err.read_text())
                rc = json.loads(answer)["rc"]
                return subprocess.CompletedProcess(cmd, rc, out.read_text(), err.read_text())

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.stdin.close()
            self._proc.wait(timeout=30)
        if self._reply is not None:
            os.close(self._reply)
            self._reply = None


def _read_line(fd: int, timeout: float) -> str | None:
    """The next line the server wrote to `fd` (unbuffered: a byte at a time, so nothing is
    read ahead), or None when none came within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        byte = os.read(fd, 1)
        if not byte:
            raise RuntimeError(f"the Snakemake server stopped: {line!r}")
        line += byte
    return line.decode().strip()


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
