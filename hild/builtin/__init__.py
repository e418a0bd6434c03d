"""Where hild's built-in files are: the benches, vessel profiles, weather presets and device
types that `hild run default`, `hild sim odin` and a bench's ``type = "gps"`` name.

A wheel (``pip install .``, ``pipx``, ``python -m build``) carries them inside this package,
as ``hild/builtin/profiles`` and ``hild/builtin/devices`` (pyproject maps the source tree's
top-level ``profiles/`` and ``devices/`` here); an editable install or a source tree on
``PYTHONPATH`` reads them from the tree itself. One place decides, for every kind of file.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

SOURCE_TREE = Path(__file__).resolve().parents[2]


def builtin_candidates(relative: str) -> tuple[Path, ...]:
    """Where a built-in folder may be, in the order looked: inside the installed package, then
    the source tree hild runs from (``relative`` is e.g. ``"profiles/bench"``)."""
    package = Path(str(files(__name__))) / relative
    return (package, SOURCE_TREE / relative)


def builtin_folder(relative: str) -> Path:
    """The first of ``builtin_candidates`` that exists; the first one if none does (its names
    are then empty, and a lookup's error says where hild looked)."""
    candidates = builtin_candidates(relative)
    return next((c for c in candidates if c.is_dir()), candidates[0])
