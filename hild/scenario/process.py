"""The external controller's process: started once the run's ports are open, watched for an
early exit, stopped cleanly at the end (SIGTERM, then SIGKILL after a timeout), its output kept.

The program runs in a session (process group) of its own: a shell script's children are
stopped with it, and a Ctrl-C on the terminal reaches hild (which stops the run and then
the program) rather than the program alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

POLL_S = 0.05  # how often the loop looks whether the program is still running [wall s]
STDOUT_FILE = "controller.stdout"
STDERR_FILE = "controller.stderr"


def unstartable(program: str) -> str | None:
    """Why ``program`` cannot be started as ``subprocess.Popen`` starts it (a bare name from
    $PATH, a path with a slash from the working directory), or None if it can."""
    if shutil.which(program) is not None:
        return None
    if os.sep not in program:
        return f"no program {program!r} on $PATH"
    path = Path(program)
    where = "" if path.is_absolute() else f" (in the working directory {os.getcwd()})"
    if not path.exists():
        return f"no file {program!r}{where}"
    if path.is_dir():
        return f"{program!r} is a folder{where}"
    return f"{program!r} is not executable{where}: chmod +x it, or start it with its interpreter"


class ControllerProcess:
    """One run of the program; ``on_exit`` is called (on the loop) if it ends by itself."""

    def __init__(self, argv: Sequence[str], output_dir: Path, stop_timeout_s: float):
        self.argv = tuple(argv)
        self.stdout_path = output_dir / STDOUT_FILE
        self.stderr_path = output_dir / STDERR_FILE
        self.stop_timeout_s = stop_timeout_s
        self.proc: subprocess.Popen | None = None
        self.start_error: str | None = None  # the program could not be started: why
        self.exited_early = False  # it ended before the run did
        self.stopped_by: str | None = None  # SIGTERM or SIGKILL, when hild stopped it
        self.wall_s = 0.0
        self._started = 0.0
        self._watch: asyncio.Task | None = None

    def start(self, on_exit: Callable[[int], None]) -> None:
        """Start the program (its stdout and stderr to files), and watch it from the loop."""
        self._started = time.monotonic()
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            try:
                self.proc = subprocess.Popen(
                    self.argv,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    start_new_session=True,
                )
            except OSError as e:  # no such program, not executable: it "exits" at once
                self.start_error = f"{self.argv[0]}: {e.strerror or e}"
                err.write(f"hild: cannot start the controller: {self.start_error}\n".encode())
                self.exited_early = True
                on_exit(127)
                return
        self._watch = asyncio.get_running_loop().create_task(self._watch_exit(on_exit))

    async def _watch_exit(self, on_exit: Callable[[int], None]) -> None:
        assert self.proc is not None
        while self.proc.poll() is None:
            await asyncio.sleep(POLL_S)
        self.exited_early = True
        self.wall_s = time.monotonic() - self._started
        on_exit(self.proc.returncode)

    async def stop(self) -> None:
        """End the program if it still runs: SIGTERM to its group, SIGKILL after the timeout."""
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is not None:
            self._reap_group()
            return
        self._signal(signal.SIGTERM)
        self.stopped_by = "SIGTERM"
        deadline = time.monotonic() + self.stop_timeout_s
        while proc.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(POLL_S)
        if proc.poll() is None:
            self._signal(signal.SIGKILL)
            self.stopped_by = "SIGKILL"
            while proc.poll() is None:
                await asyncio.sleep(POLL_S)
        self.wall_s = time.monotonic() - self._started
        self._reap_group()

    def _signal(self, sig: signal.Signals) -> None:
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    def _reap_group(self) -> None:
        """Whatever the program left running in its group goes too (no orphans after a run)."""
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def summary(self) -> dict:
        proc = self.proc
        return {
            "argv": list(self.argv),
            "pid": proc.pid if proc is not None else None,
            "exit_code": proc.returncode if proc is not None else 127,
            "exited_early": self.exited_early,
            "stopped_by": self.stopped_by,
            "start_error": self.start_error,
            "wall_s": round(self.wall_s, 3),
            "stdout": str(self.stdout_path),
            "stderr": str(self.stderr_path),
        }
