"""canboat's JavaScript decoder (``analyzerjs`` of @canboat/canboatjs), the NMEA 2000 tests'
independent decoder: found in $HILD_ANALYZERJS, on the PATH, or in the repository's ``.tools``
(where .ci/run installs it: ``npm install --prefix .tools @canboat/canboatjs``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOCAL = ROOT / ".tools" / "node_modules" / ".bin" / "analyzerjs"
ANALYZERJS = (
    os.environ.get("HILD_ANALYZERJS")
    or shutil.which("analyzerjs")
    or (str(LOCAL) if LOCAL.exists() else None)
)
needs_analyzerjs = pytest.mark.skipif(
    ANALYZERJS is None,
    reason="canboat's analyzerjs is not installed (npm install --prefix .tools "
    "@canboat/canboatjs; or put analyzerjs on the PATH or name it in $HILD_ANALYZERJS)",
)


def decode(lines: list[bytes] | bytes, timeout: float = 120.0) -> list[dict]:
    """Every message analyzerjs decodes from the lines (YDRAW or Actisense ASCII), in order."""
    assert ANALYZERJS is not None
    data = lines if isinstance(lines, bytes) else b"".join(lines)
    done = subprocess.run(
        [ANALYZERJS], input=data, capture_output=True, timeout=timeout, check=False
    )
    out = []
    for line in done.stdout.decode().splitlines():
        line = line.strip()
        if line.startswith("{"):
            out.append(json.loads(line))
    return out
