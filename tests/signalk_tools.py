"""A Signal K server for the tests (signalk-server from npm): found in $HILD_SIGNALK_SERVER, on
the PATH, or in the repository's ``.tools`` (where .ci/run installs it), started with one
piped provider on a configuration of its own, and read through its REST API."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOCAL = ROOT / ".tools" / "node_modules" / ".bin" / "signalk-server"
SIGNALK = (
    os.environ.get("HILD_SIGNALK_SERVER")
    or shutil.which("signalk-server")
    or (str(LOCAL) if LOCAL.exists() else None)
)
needs_signalk = pytest.mark.skipif(
    SIGNALK is None,
    reason="signalk-server is not installed (npm install --prefix .tools signalk-server; or put "
    "it on the PATH or name it in $HILD_SIGNALK_SERVER)",
)


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())


def value(vessel: dict, *path: str):
    """The ``value`` at a Signal K path of a vessel's tree (None where it is not)."""
    node = vessel
    for key in path:
        node = node.get(key, {}) if isinstance(node, dict) else {}
    return node.get("value") if isinstance(node, dict) else None


@contextmanager
def signalk_server(folder: Path, http: int, options: dict) -> Iterator[str]:
    """A running server with one provider (``options``: a providers/simple's options), its
    vessels' REST URL yielded once it answers; stopped after."""
    config = folder / "signalk"
    config.mkdir()
    (config / "package.json").write_text("{}")
    provider = {
        "id": "hild",
        "enabled": True,
        "pipeElements": [{"type": "providers/simple", "options": {"logging": False, **options}}],
    }
    settings = {
        "interfaces": {"nmea-tcp": False, "tcp": False, "mdns": False},  # (10110: not ours)
        "ssl": False,
        "pipedProviders": [provider],
    }
    (config / "settings.json").write_text(json.dumps(settings))
    log_path = folder / "signalk.log"
    log = open(log_path, "w")  # noqa: SIM115  (as long as the server)
    assert SIGNALK is not None
    server = subprocess.Popen(
        [SIGNALK, "-c", str(config)], stdout=log, stderr=log, env={**os.environ, "PORT": str(http)}
    )
    try:
        api = f"http://127.0.0.1:{http}/signalk/v1/api/vessels"
        deadline = time.monotonic() + 90
        while True:
            try:
                get(api)
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, log_path.read_text()
                time.sleep(0.5)
        yield api
    finally:
        server.terminate()
        server.wait(10)
        log.close()
