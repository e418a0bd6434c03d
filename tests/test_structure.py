"""The core's shape: the vessel model knows nothing of weather, the environment nothing of the
hull's equations; only hild/coupled imports both."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

HILD = Path(__file__).resolve().parents[1] / "hild"
RULES = [
    ("model", ("hild.environment", "hild.coupled")),
    ("environment", ("hild.model", "hild.coupled")),
    # the port URLs take their default run directory from hild.rundir: not the other way round
    ("rundir", ("hild.transport",)),
    # the tick observers see the daemon through observers.RunningDaemon: none imports it
    ("observers", ("hild.daemon",)),
    ("mirror", ("hild.daemon",)),
    ("record", ("hild.daemon",)),
    ("systemd", ("hild.daemon",)),
    ("runtime", ("hild.daemon",)),
]


def imported_modules(path: Path, root: Path) -> set[str]:
    """Every module a file under ``root`` (the folder holding the package) imports, relative
    imports resolved."""
    tree = ast.parse(path.read_text(), str(path))
    package = path.relative_to(root).with_suffix("").parts[:-1]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def cross_imports(root: Path, package: str, forbidden: tuple[str, ...]) -> list[str]:
    offences = []
    module = root / "hild" / f"{package}.py"  # a module of its own, or a package's folder
    paths = [module] if module.exists() else sorted((root / "hild" / package).rglob("*.py"))
    for path in paths:
        for name in sorted(imported_modules(path, root)):
            if name.startswith(forbidden):
                offences.append(f"{path.relative_to(root)} imports {name}")
    return offences


@pytest.mark.parametrize(("package", "forbidden"), RULES)
def test_the_core_packages_do_not_import_each_other(package, forbidden):
    assert cross_imports(HILD.parent, package, forbidden) == []


def test_a_cross_import_is_caught_absolute_relative_or_lazy(tmp_path):
    model = tmp_path / "hild" / "model"
    model.mkdir(parents=True)
    (model / "a.py").write_text("from hild.environment import layout\n")
    (model / "b.py").write_text("from ..environment.kernel import env_advance\n")
    (model / "c.py").write_text("def f():\n    import hild.coupled.loop\n")
    (model / "d.py").write_text("from hild.model import layout\nimport math\n")
    assert cross_imports(tmp_path, *RULES[0]) == [
        "hild/model/a.py imports hild.environment",
        "hild/model/a.py imports hild.environment.layout",
        "hild/model/b.py imports hild.environment.kernel",
        "hild/model/b.py imports hild.environment.kernel.env_advance",
        "hild/model/c.py imports hild.coupled.loop",
    ]


# Each module imported first, as a user's script or a lone test file would: a cycle that the
# usual import order hides (hild.transport loaded before hild.rundir) shows here. One
# interpreter; hild's modules are forgotten between imports, the third-party ones kept.
EACH_MODULE_ALONE = """
import importlib, pathlib, sys
failures = []
for path in sorted(pathlib.Path(sys.argv[1]).rglob("*.py")):
    parts = path.relative_to(pathlib.Path(sys.argv[1]).parent).with_suffix("").parts
    name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    for loaded in [m for m in sys.modules if m == "hild" or m.startswith("hild.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception as error:
        failures.append(f"{name}: {type(error).__name__}: {error}")
print("\\n".join(failures))
"""


def test_every_module_imports_on_its_own():
    done = subprocess.run(
        [sys.executable, "-c", EACH_MODULE_ALONE, str(HILD)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
