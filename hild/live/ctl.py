"""``hild ctl``'s server: a Unix socket in the run directory that takes runtime control
requests, with exactly the requests and answers of the MQTT control topic (hild/runtime.py),
plus ``status``.

The socket is ``<run dir>/hild.ctl``, mode 0600: only the user running hild can connect (a
Unix socket takes a connection only from whoever may write it). One JSON object per line each
way: ``{"request": "weather", "payload": {...}}`` (or a payload string: NMEA lines for
``commands``) in, the answer out (``ok``, ``error`` when refused, as on MQTT). Requests are
served on the event loop and become records on the control queue: a tick never waits for a
client. A socket left by a daemon that died is replaced; one that a live daemon answers on is
left to it, and this run goes without ``hild ctl`` (logged, with what to do). The socket is
looked at every second while the run goes on: one removed under the run (with its run
directory, by a cleanup of /tmp, or alone) is made again, so ``hild ctl`` reaches the run
again (``ctl.recreated``); a run directory gone with it is made again first, with its lock
and links, by the run's hold on it (``RunDir.keep``, hild.rundir) when the run holds one.

Limits (hild/live/connections.py): at most MAX_CONNECTIONS connections at once, each beyond
answered ``{"ok": false, "error": "busy: ..."}`` and closed; a connection that sends no whole
request line for IDLE_TIMEOUT_S is answered ``{"ok": false, "error": "idle: ..."}`` and
closed; a listen backlog of ``socket.SOMAXCONN``, so a burst of connections waits to be
answered rather than being refused by the kernel.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from hild.config import json_value
from hild.live.address import STATUS, socket_path
from hild.live.connections import BoundedServer, listen_unix
from hild.live.status import StatusBoard
from hild.observers import TickObserver
from hild.rundir import WATCH_INTERVAL_S, RunDir, RunDirError, make_private_dir
from hild.runtime import MAX_REQUEST_BYTES, REQUESTS

if TYPE_CHECKING:
    from hild.observers import RunView

log = structlog.get_logger("hild.ctl")

SOURCE = "ctl"  # requests' source in the recording: ctl/<request>
# Connections served at once. `hild ctl` holds one for a request and its answer (milliseconds
# but a weather's rebuild); 64 lets a script fan out (xargs -P) and keeps what ctl may hold of
# the daemon's descriptors (which its ports, ptys, MQTT and Foxglove need too, under a soft
# limit of 1024 by default) and memory (a 65 KB line buffer each) small.
MAX_CONNECTIONS = 64
# A connection that sends no request (or no whole line) for this long is told so and closed:
# `hild ctl` sends its request as it connects; a held connection costs a slot of 64.
IDLE_TIMEOUT_S = 30.0


def busy(max_connections: int) -> bytes:
    """The line a connection beyond ``max_connections`` is answered with before it closes."""
    error = (
        f"busy: {max_connections} hild ctl connections are open, the most a run serves at "
        "once; try again"
    )
    return json.dumps({"ok": False, "error": error}).encode() + b"\n"


class ControlSocket(TickObserver):
    """Serves ``hild ctl`` for one run (see the module's description)."""

    keep_interval_s = WATCH_INTERVAL_S  # how soon a socket removed under the run is made again
    max_connections = MAX_CONNECTIONS
    idle_timeout_s = IDLE_TIMEOUT_S

    def __init__(self, board: StatusBoard, run_dir: RunDir | None = None) -> None:
        """``run_dir``: the run's hold on its run directory, when it has one (pty links go
        in it), to make the directory again with its lock and links before the socket."""
        self.board = board  # (an observer of the run itself, which keeps it current)
        self.run_dir = run_dir
        self.path: Path | None = None
        self._server: BoundedServer | None = None
        self._made: os.stat_result | None = None  # the socket file this run made and serves
        self._keeper: asyncio.Task | None = None
        self.requests = 0
        self.refused = 0  # connections refused by the servers of sockets made before this one
        self.idle_closed = 0  # connections closed for sending nothing for idle_timeout_s

    async def start(self, run: RunView) -> None:
        self._run = run
        path = socket_path(run.bench.run_dir)
        problem = await self._listen(path)
        if problem:  # (a run without hild ctl is still a run)
            log.warning("ctl.unavailable", socket=str(path), **problem)
            return
        log.info("ctl.listening", socket=str(path))
        self._keeper = asyncio.create_task(self._keep(path))

    async def _listen(self, path: Path) -> dict[str, str]:
        """Serve on a socket at ``path``, made now; what went wrong (empty when nothing)."""
        try:
            make_private_dir(str(path.parent))
            if path.exists() or path.is_symlink():
                if await _answers(path):
                    hint = "give this run its own --run-dir to reach it with hild ctl"
                    return {"reason": "another hild run answers on this socket", "hint": hint}
                path.unlink()  # left by a daemon that is gone
            old = os.umask(0o177)  # the socket is made 0600: this user only
            try:
                sock = listen_unix(str(path))
            finally:
                os.umask(old)
            made = os.stat(path, follow_symlinks=False)
        except (OSError, RunDirError) as e:
            return {"reason": e.strerror if isinstance(e, OSError) and e.strerror else str(e)}
        cap = self.max_connections
        server = BoundedServer(
            sock,
            self._serve,
            max_connections=cap,
            refusal=busy(cap),
            limit=MAX_REQUEST_BYTES + 1024,
        )
        server.start()
        self._server, self._made, self.path = server, made, path
        return {}

    def _in_place(self, path: Path) -> bool:
        """Whether the socket file at ``path`` is still the one this run made."""
        try:
            return self._made is not None and os.path.samestat(
                os.stat(path, follow_symlinks=False), self._made
            )
        except OSError:
            return False

    async def _keep(self, path: Path) -> None:
        """Make the socket again whenever it is removed under the run (see the module)."""
        problem: dict[str, str] = {}
        while True:
            await asyncio.sleep(self.keep_interval_s)
            if self._in_place(path):
                continue
            if self.run_dir is not None and not path.parent.is_dir():
                await asyncio.to_thread(self.run_dir.keep)  # (its watcher's own, if first)
            gone, self._server = self._server, None
            if gone is not None:
                gone.close()  # (its file is gone or another's: nothing of it to remove)
                self.refused += gone.refused
            found = await self._listen(path)
            if not found:
                log.warning("ctl.recreated", socket=str(path))
            elif found != problem:
                log.warning("ctl.unavailable", socket=str(path), **found)
            problem = found

    async def stop(self, run: RunView) -> None:
        if self._keeper is not None:
            self._keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keeper
        if self._server is None:
            return
        self._server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), 1.0)
        if self.path is not None and self._in_place(self.path):  # ours only: never another's
            with contextlib.suppress(OSError):
                self.path.unlink()

    def summary(self) -> dict:
        if not self.path:
            return {}
        refused = self.refused + (self._server.refused if self._server is not None else 0)
        return {
            "ctl": {
                "socket": str(self.path),
                "requests": self.requests,
                "connections_refused": refused,
                "connections_idle_closed": self.idle_closed,
            }
        }

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One client: a request per line, each answered, until it closes, sends a line
        longer than the limit or sends nothing for ``idle_timeout_s`` (told why, then
        closed)."""
        try:
            while True:
                try:
                    line = await asyncio.wait_for(reader.readline(), self.idle_timeout_s)
                except ValueError:  # longer than the limit: answered, then the connection ends
                    await self._send(
                        writer,
                        {"ok": False, "error": f"a request of at most {MAX_REQUEST_BYTES} bytes"},
                    )
                    return
                except TimeoutError:
                    self.idle_closed += 1
                    await self._send(
                        writer,
                        {
                            "ok": False,
                            "error": "idle: no request in "
                            f"{self.idle_timeout_s:g} s; connect again to "
                            "send one",
                        },
                    )
                    return
                if not line:
                    return
                await self._send(writer, await self._handle(line))
        except (ConnectionError, OSError, TimeoutError):
            return
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _send(self, writer: asyncio.StreamWriter, answer: dict) -> None:
        """An answer, as one line; a client that does not read it within the idle time
        (TimeoutError) loses its connection."""
        writer.write(json.dumps(answer).encode() + b"\n")
        await asyncio.wait_for(writer.drain(), self.idle_timeout_s)

    async def _handle(self, line: bytes) -> dict[str, Any]:
        self.requests += 1
        try:
            message = json_value(line)
        except ValueError as e:
            return {"ok": False, "error": f"a JSON object per line ({e})"}
        request = message.get("request") if isinstance(message, dict) else None
        if request == STATUS:
            status = self.board.now(self._run)
            return {"ok": True, "request": STATUS, "status": status}
        if request not in REQUESTS:
            return {
                "ok": False,
                "request": request,
                "error": f"a request among: {', '.join((*REQUESTS, STATUS))}",
            }
        payload = message.get("payload", {})
        data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        return await self._run.runtime_control.handle(request, data, SOURCE)


async def _answers(path: Path) -> bool:
    """Whether a live daemon listens on the socket at ``path``."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_unix_connection(str(path)), 1.0)
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(Exception):
        await writer.wait_closed()
    return True
