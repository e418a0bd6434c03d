"""Where numba caches the compiled kernels: a directory keyed on the kernels' own sources.

numba checks only a kernel's own file for staleness, so a kernel compiled against an older
layout module (or an older callee in another file) would be loaded from its cache and index
the arrays wrongly. Keying the cache directory on the contents of every module of the
compiled core (``hild/model``, ``hild/environment``, ``hild/coupled``, ``hild/traffic``)
makes any change there compile afresh. The directory is the user's cache
(``$XDG_CACHE_HOME/hild`` or ``~/.cache/hild``), or under ``$NUMBA_CACHE_DIR`` when that is
set (the systemd units set it), and falls back to a per-user directory in the temporary
folder when neither can be written.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parent
COMPILED = (
    "model",
    "environment",
    "coupled",
    "traffic",
)  # the packages whose modules numba compiles or inlines
COMPILED_MODULES = ("compiled.py",)  # and the module that says how it compiles them
PREFIX = "kernels-"


def sources_key() -> str:
    """A short hash of every module of the compiled core, names and contents."""
    digest = hashlib.sha256()
    for folder in COMPILED:
        for path in sorted((PACKAGE / folder).glob("*.py")):
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    for name in COMPILED_MODULES:
        digest.update(name.encode())
        digest.update((PACKAGE / name).read_bytes())
    return digest.hexdigest()[:16]


def _writable(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError:
        return False
    return os.access(path, os.W_OK | os.X_OK)


def configure_kernel_cache() -> str | None:
    """Point NUMBA_CACHE_DIR at the keyed directory; returns it (None: left to numba)."""
    given = os.environ.get("NUMBA_CACHE_DIR", "")
    if Path(given).name.startswith(PREFIX):
        return given  # set by a parent hild process: already keyed
    if given:
        root = Path(given)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        root = Path(xdg) / "hild"
    key = PREFIX + sources_key()
    for candidate in (root, Path(tempfile.gettempdir()) / f"hild-cache-{os.getuid()}"):
        if _writable(candidate / key):
            os.environ["NUMBA_CACHE_DIR"] = str(candidate / key)
            return os.environ["NUMBA_CACHE_DIR"]
    return None


_cold: bool | None = None


def started_cold() -> bool:
    """Whether the cache held no kernels when this process first asked (hild/__init__.py asks
    at import, before anything compiles): what a run says of its preparation."""
    global _cold
    if _cold is None:
        _cold = not kernels_cached()
    return _cold


def kernels_cached() -> bool:
    """Whether this installation's compiled kernels are in the cache (False: this run compiles
    them, which takes seconds here and up to a minute on a Raspberry Pi).

    numba keeps a source folder's kernels in a subfolder of the cache named for that folder's
    path (``coupled_<sha1 of the folder's absolute path>``: numba's
    ``_CacheLocator.get_suitable_cache_subpath``), so the kernels that another checkout or
    install of the same sources compiled into the same directory are not this one's: a
    wheel's first run beside a source tree compiles, and must say so."""
    folder = os.environ.get("NUMBA_CACHE_DIR", "")
    if not folder:
        return False
    return any((Path(folder) / kernel_subfolder(TICK_KERNELS)).glob("*.nbi"))


TICK_KERNELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "coupled")


def kernel_subfolder(source_folder: str) -> str:
    """The cache's subfolder for the kernels of the modules in ``source_folder``, as numba
    names it (the folder's name and the SHA-1 of its absolute path)."""
    path = os.path.abspath(source_folder)
    return f"{os.path.basename(path)}_{hashlib.sha1(path.encode()).hexdigest()}"


_announced = False


def announce_compiling() -> None:
    """Say on stderr, before it happens, that this run compiles the kernels (a silent wait of
    seconds, up to a minute on a Raspberry Pi, looks like a hang); once a process."""
    global _announced
    if not _announced and not kernels_cached():
        _announced = True
        from hild.log import write_or_drop  # structlog: not at `import hild` time

        write_or_drop(
            sys.stderr,
            "hild: compiling the vessel model (the first run only; later runs load it from "
            "the cache; `hild warm` compiles it ahead, e.g. after an install) ...\n",
        )


def mark_announced() -> None:
    """A command that says it compiles in its own words (hild warm): no second notice."""
    global _announced
    _announced = True


# Results of the compiled core that a command needs and that depend only on the core's sources
# and its inputs (a vessel's step limit): kept beside the kernels, in the keyed directory, so a
# change to the core forgets them with the kernels, and a command that finds its answer here
# needs neither numba nor the kernels (`hild check` on a known profile).
MEMO_FILE = "results.json"


def recall(key: str) -> Any:
    """The value remembered under ``key`` (None: not remembered, or no cache directory)."""
    folder = os.environ.get("NUMBA_CACHE_DIR", "")
    if not Path(folder).name.startswith(PREFIX):
        return None
    try:
        return json.loads((Path(folder) / MEMO_FILE).read_text()).get(key)
    except (OSError, ValueError, AttributeError):  # none yet, or torn: computed again
        return None


def remember(key: str, value: Any) -> None:
    """Keep ``value`` (JSON) under ``key``; replaced whole, so a reader never sees half a file.
    Best effort: a cache that cannot be written costs the next run the computation."""
    folder = os.environ.get("NUMBA_CACHE_DIR", "")
    if not Path(folder).name.startswith(PREFIX):
        return
    path = Path(folder) / MEMO_FILE
    try:
        try:
            table = json.loads(path.read_text())
            table = table if isinstance(table, dict) else {}
        except (OSError, ValueError):
            table = {}
        table[key] = value
        temporary = path.with_name(f"{MEMO_FILE}.{os.getpid()}")
        temporary.write_text(json.dumps(table))
        os.replace(temporary, path)
    except OSError:
        pass
