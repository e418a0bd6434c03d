"""`hild` commands run in a process of their own, forked from one that has imported hild and
its heavy libraries already, for the one-shot commands that the error tests run by the hundred.

Each command is still a process: its own exit status, standard streams, environment, working
folder and module state (a fork of a server that has imported modules and run nothing), and
one that hangs is killed at its timeout. Only the interpreter's start and the imports are
shared: about half a second a command (`python -m hild.cli check ...` takes 0.6 s on this
machine, most of it importing numpy, numba and hild) becomes a few milliseconds.
`run_hild` answers as ``subprocess.run(..., capture_output=True, text=True)`` does. Daemons,
and tests of how hild starts (the kernel cache, the console script, `python -m`), run real
subprocesses instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# The server: imports, then for each request (a JSON line on stdin) forks a child that runs
# hild.cli.main with the request's argv, folder and environment, its streams in the files
# named; it answers the child's pid, then its exit status (a JSON line each, on stdout).
SERVER = r"""
import atexit, json, os, sys
import numpy, numba  # noqa: F401  (the heavy part of every command's start)
import hild.cli, hild.check, hild.bench, hild.sim, hild.coupled.simulation  # noqa: F401
from hild.cli import main

requests, answers = sys.stdin.buffer, os.fdopen(os.dup(1), "w")
null = os.open(os.devnull, os.O_RDONLY)
kept = {k: os.environ[k] for k in ("NUMBA_CACHE_DIR",) if k in os.environ}
for line in requests:
    request = json.loads(line)
    sys.stdout.flush(); sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setpgid(0, 0)
            os.dup2(null, 0)
            os.dup2(os.open(request["out"], os.O_WRONLY | os.O_TRUNC), 1)
            os.dup2(os.open(request["err"], os.O_WRONLY | os.O_TRUNC), 2)
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update({**kept, **request["env"]})
            sys.argv = ["hild", *request["argv"]]
            try:
                code = main(request["argv"])
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
                if isinstance(e.code, str):
                    print(e.code, file=sys.stderr)
            atexit._run_exitfuncs()
        finally:
            try:
                sys.stdout.flush(); sys.stderr.flush()
            finally:
                os._exit(code)
    answers.write(json.dumps({"pid": pid}) + "\n"); answers.flush()
    _, status = os.waitpid(pid, 0)
    answers.write(json.dumps({"status": os.waitstatus_to_exitcode(status)}) + "\n")
    answers.flush()
"""


class ForkServer:
    """One server per test process, started on first use; requests one at a time."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen | None = None
        self._pending = b""  # what the server answered past the last line taken
        self._lock = threading.Lock()

    def _server(self) -> subprocess.Popen:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", SERVER],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                cwd=REPO,
            )
            self._pending = b""
        return self._proc

    def _answer(self, fd: int, timeout: float | None) -> dict | None:
        """The server's next answer line, or None at the timeout."""
        while b"\n" not in self._pending:
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                return None
            block = os.read(fd, 4096)
            if not block:
                raise RuntimeError("the hild fork server ended")
            self._pending += block
        line, self._pending = self._pending.split(b"\n", 1)
        return json.loads(line)

    def run(
        self, argv: list[str], env: dict[str, str] | None, cwd: str | Path | None, timeout: float
    ) -> subprocess.CompletedProcess:
        with self._lock, tempfile.TemporaryDirectory(prefix="hild-cli-") as folder:
            out, err = Path(folder, "out"), Path(folder, "err")
            out.touch()
            err.touch()
            server = self._server()
            assert server.stdin is not None and server.stdout is not None
            request = {
                "argv": argv,
                "cwd": str(cwd or os.getcwd()),
                "env": dict(os.environ if env is None else env),
                "out": str(out),
                "err": str(err),
            }
            server.stdin.write(json.dumps(request).encode() + b"\n")
            server.stdin.flush()
            fd = server.stdout.fileno()
            pid = self._answer(fd, None)["pid"]
            done = self._answer(fd, timeout)
            if done is None:  # a hang fails the command as subprocess.run's timeout does
                with contextlib.suppress(ProcessLookupError):  # (it ended just then)
                    os.killpg(pid, signal.SIGKILL)
                self._answer(fd, None)
            stdout, stderr = out.read_text(errors="replace"), err.read_text(errors="replace")
        if done is None:
            raise subprocess.TimeoutExpired(["hild", *argv], timeout, stdout, stderr)
        return subprocess.CompletedProcess(["hild", *argv], done["status"], stdout, stderr)

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.stdin.close()  # (its loop ends with its input)
            self._proc.wait(10)


_SERVER = ForkServer()


def run_hild(
    *argv: str,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    timeout: float = 60.0,
) -> subprocess.CompletedProcess:
    """`hild ARGV...` in a forked process: its exit status, stdout and stderr as text."""
    return _SERVER.run(list(argv), env, cwd, timeout)
