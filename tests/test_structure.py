"""hild's shape, read from its import graph: no import cycles, no loops between its folders,
layers imported only downwards (LAYERS), the lockstep and sweep code off the real-time driver,
the sensors off the buses; and the core's own shape: the vessel model knows nothing of weather,
the environment nothing of the hull's equations; only hild/coupled imports both (RULES).

The graph is read with ``ast`` from the files under hild/ (nothing of hild is imported):
``import hild.a``, ``from hild.a import b`` (hild/a/b.py when b is a module, else hild/a),
relative imports, and imports inside functions (a lazy import is still a dependency). Those
under ``if TYPE_CHECKING:`` are for the type checker only and count for no rule
(``type_only_imports`` lists them). The helpers below are meant for a report script too
(one that prints every finding at once, while code is being moved around).
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from collections import defaultdict, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

import pytest

HILD = Path(__file__).resolve().parents[1] / "hild"

# The layers, bottom to top: a module may import from its own layer and the ones below it.
# An entry names a top-level module ("bench": hild/bench.py) or folder ("sensors": hild/sensors/),
# or a part of one ("scenario/lockstep": hild/scenario/lockstep.py; "bus/protocols": a
# subfolder); a module belongs to its longest matching entry, so a folder is split by listing
# its odd modules in another layer. Every module must match an entry, every entry a module.
LAYERS: dict[str, list[str]] = {
    # pure code without I/O: the compiled core, its records and their readers, the sentences
    "core": [
        "__init__",
        "compiled",
        "kernel_cache",
        "model",
        "environment",
        "coupled",
        "traffic",
        "nmea",
        "units",
        "geodesy",  # the origin and its local frame (traffic/ and sensors/ use it)
        "profiles",
        "builtin",
        # and the leaves every layer uses: files, names, options, logging, clocks, threads, heap
        "config",
        "toml_twice",
        "names",
        "arguments",
        "log",
        "log_console",  # the console's rendering of run.summary (log.py's renderer)
        "clock",
        "threads",
        "heap",
    ],
    # what the devices are and how they talk
    "devices": [
        "sensors",
        "bus",
        "control",  # the records a device's command becomes, applied by the world
        "ardupilot",
        "devices",  # the device kinds
        "transport",
        "rundir",  # where the pty links live (transport/pty.py)
        "pilot",  # the reference controller, at the other end of the wires
        "kit",  # the controller author's kit: sentences, own fix, AIS targets
        "n2k",  # NMEA 2000: the PGNs, the CAN frames, the N2K sensors
    ],
    # one run's world: what it is made of (a bench, a scenario) and what is stepped in it
    "world": [
        "bench",
        "fleet",  # a bench's boats and the rules across them
        "mirror/config",  # a bench's [mirror] section
        "record/config",  # a bench's [record] section
        "world",
        "observers",
        "runtime",
        "scenario",  # a scenario's files, controller and judging
    ],
    # what steps a world in time, and what watches it run
    "drivers": [
        "drivers",
        "scenario/lockstep",
        "scenario/fleet_lockstep",  # a fleet scenario's lockstep driver
        "scenario/external",  # a scenario against the real-time driver
        "scenario/runs",  # which of the two runs a scenario
        "live",
        "mirror",
        "record",
        "systemd",
    ],
    # the command line, and what its commands do
    "commands": [
        "cli",
        "run",
        "run_options",
        "ardupilot/howto",  # the SITL start commands `hild run`'s banner prints for a bench
        "firstcontact",
        "examples",
        "check",
        "sim",
        "sim_options",
        "batch",
        "warm",
        "show",
        "show_options",
        "scenario/command",
        "scenario/check",
        "scenario/options",
        "scenario/report",
        "junit",
        "sweep",
    ],
}

# Imports that run up the layers and are allowed, each with its reason (at most MAX_ALLOWED_UP):
# (importing file, imported file), as in
#     ("hild/bench.py", "hild/record/observer.py"),  # why this one is right
ALLOWED_UP: set[tuple[str, str]] = set()
MAX_ALLOWED_UP = 3

# Lockstep runs and sweeps step the world themselves: they must not reach the real-time driver
# (hild/drivers/realtime.py) through any chain of imports, lazy ones too.
LOCKSTEP_AND_SWEEP = ("scenario/lockstep", "scenario/fleet_lockstep", "sweep")
REALTIME_DRIVER = frozenset({"drivers/realtime"})

# The sensors make sentences; what carries them or takes commands is not theirs to import.
SENSORS = "sensors"
NOT_FOR_SENSORS = ("bus", "ardupilot")


# ---------------------------------------------------------------------------------------------
# The import graph
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Import:
    """One import statement's edge: ``source`` imports ``names`` from ``target`` (files
    relative to the folder holding hild/, e.g. "hild/sensors/gps.py")."""

    source: str
    target: str
    names: tuple[str, ...]
    line: int


@dataclass
class Graph:
    """hild's modules (files) and the imports between them.

    ``imports`` are the ones that run (lazy ones inside functions included); those under
    ``if TYPE_CHECKING:`` are kept apart in ``type_only``; ``unresolved`` are imports of hild
    modules that have no file.
    """

    modules: list[str]
    imports: list[Import] = field(default_factory=list)
    type_only: list[Import] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)

    def file_of(self, module: str) -> str | None:
        """The file of ``module`` ("hild.a.b": hild/a/b.py or hild/a/b/__init__.py), if any."""
        path = module.replace(".", "/")
        return next((f for f in (f"{path}.py", f"{path}/__init__.py") if f in self.files), None)

    @functools.cached_property
    def files(self) -> frozenset[str]:
        return frozenset(self.modules)

    @functools.cached_property
    def successors(self) -> dict[str, set[str]]:
        edges: dict[str, set[str]] = {module: set() for module in self.modules}
        for imp in self.imports:
            if imp.target != imp.source:
                edges[imp.source].add(imp.target)
        return edges

    def between(self, edges: Iterable[tuple[str, str]]) -> list[Import]:
        """The imports that make the (source, target) ``edges``, in their order."""
        return [imp for edge in edges for imp in self.imports if (imp.source, imp.target) == edge]

    def chain(self, start: str, goals: set[str]) -> list[str] | None:
        """The shortest chain of imports from ``start`` to one of ``goals`` (the modules on
        the way, both ends included), or None when none is reached."""
        came_from: dict[str, str | None] = {start: None}
        queue = deque([start])
        while queue:
            module = queue.popleft()
            if module in goals:
                path = [module]
                while (previous := came_from[path[-1]]) is not None:
                    path.append(previous)
                return path[::-1]
            for target in sorted(self.successors[module]):
                if target not in came_from:
                    came_from[target] = module
                    queue.append(target)
        return None


def is_type_checking(test: ast.expr) -> bool:
    """``if TYPE_CHECKING:`` or ``if typing.TYPE_CHECKING:``."""
    name = test.attr if isinstance(test, ast.Attribute) else getattr(test, "id", None)
    return name == "TYPE_CHECKING"


ImportStatement = ast.Import | ast.ImportFrom


def import_statements(
    node: ast.AST, type_only: bool = False
) -> Iterator[tuple[ImportStatement, bool]]:
    """Every import statement in ``node`` (in functions and classes too), with whether it sits
    under ``if TYPE_CHECKING:`` (that ``if``'s ``else:`` runs)."""
    if isinstance(node, ImportStatement):
        yield node, type_only
    elif isinstance(node, ast.If) and is_type_checking(node.test):
        for statement in node.body:
            yield from import_statements(statement, True)
        for statement in node.orelse:
            yield from import_statements(statement, type_only)
    else:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt | ast.excepthandler | ast.match_case):  # (no import
                yield from import_statements(child, type_only)  # is in an expression)


def from_module(source: str, statement: ast.ImportFrom) -> str:
    """The module a ``from ... import`` names, a relative one resolved from ``source``."""
    if not statement.level:
        return statement.module or ""
    package = source.removesuffix(".py").split("/")[:-1]  # (an __init__'s package: its own)
    base = package[: len(package) - statement.level + 1]
    return ".".join([*base, statement.module] if statement.module else base)


def imported(graph: Graph, source: str, statement: ImportStatement) -> Iterator[tuple[str, str]]:
    """(module, name) for each name ``statement`` imports: ``from hild.a import b`` imports
    the module hild.a.b when there is one, else the name b from hild.a."""
    if isinstance(statement, ast.Import):
        for alias in statement.names:
            yield alias.name, alias.name
    else:
        module = from_module(source, statement)
        for alias in statement.names:
            submodule = f"{module}.{alias.name}"
            yield (submodule if graph.file_of(submodule) else module), alias.name


def is_hild(module: str) -> bool:
    return module == "hild" or module.startswith("hild.")


def read_imports(root: Path, source: str, graph: Graph) -> None:
    """Add the imports of ``source`` (a file under ``root``) to ``graph``."""
    tree = ast.parse((root / source).read_text(), source)
    for statement, type_only in import_statements(tree):
        names: dict[str, list[str]] = defaultdict(list)  # file -> the names taken from it
        for module, name in imported(graph, source, statement):
            if not is_hild(module):
                continue
            file = graph.file_of(module)
            if file is None:
                graph.unresolved.append(f"{source}:{statement.lineno} imports {module}")
            else:
                names[file].append(name)
        for file, taken in names.items():
            edge = Import(source, file, tuple(taken), statement.lineno)
            (graph.type_only if type_only else graph.imports).append(edge)


def build_graph(root: Path) -> Graph:
    """The import graph of the package hild/ in the folder ``root``."""
    modules = sorted(path.relative_to(root).as_posix() for path in (root / "hild").rglob("*.py"))
    graph = Graph(modules)
    for source in modules:
        read_imports(root, source, graph)
    return graph


@functools.cache
def hild_graph() -> Graph:
    """hild's own import graph, read once per session."""
    return build_graph(HILD.parent)


# ---------------------------------------------------------------------------------------------
# What the rules see of it
# ---------------------------------------------------------------------------------------------


def parts(module: str) -> tuple[str, ...]:
    """A module's place inside hild/: "hild/sensors/gps.py" -> ("sensors", "gps")."""
    return tuple(module.removesuffix(".py").split("/")[1:])


def is_under(module: str, entry: str) -> bool:
    """Whether ``module`` is the module or inside the folder ``entry`` ("sensors/gps")."""
    prefix = tuple(entry.split("/"))
    return parts(module)[: len(prefix)] == prefix


def folder(module: str) -> str:
    """The module's top-level node: its folder under hild/, or itself when it is not in one
    ("hild/sensors/gps.py" -> "sensors", "hild/bench.py" -> "bench")."""
    return parts(module)[0]


def layer_entry(module: str) -> str | None:
    """The longest LAYERS entry ``module`` is under; None when it is in no layer."""
    matching = [e for entries in LAYERS.values() for e in entries if is_under(module, e)]
    return max(matching, key=lambda entry: entry.count("/"), default=None)


def layer_of(module: str) -> int | None:
    """The module's layer, counted from the bottom (0, core); None when unassigned."""
    entry = layer_entry(module)
    if entry is None:
        return None
    return next(i for i, entries in enumerate(LAYERS.values()) if entry in entries)


def describe(imports: Iterable[Import]) -> str:
    """One line per importing edge: "hild/a.py -> hild/b.py: X, Y" (lines of the imports)."""
    names: dict[tuple[str, str], list[str]] = defaultdict(list)
    for imp in imports:
        names[imp.source, imp.target].extend(f"{name} (l.{imp.line})" for name in imp.names)
    return "\n".join(f"  {s} -> {t}: {', '.join(n)}" for (s, t), n in names.items())


def strongly_connected(successors: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in successors.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component: list[str] = []
            while not component or component[-1] != node:
                component.append(stack.pop())
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(successors):
        if node not in index:
            visit(node)
    return sorted(components)


def module_cycles(graph: Graph) -> list[list[Import]]:
    """The imports inside each import cycle between modules."""
    return [
        graph.between((s, t) for s in cycle for t in sorted(graph.successors[s]) if t in cycle)
        for cycle in strongly_connected(graph.successors)
    ]


def folder_successors(graph: Graph) -> dict[str, set[str]]:
    """The graph of the top-level folders (and top-level modules): who imports from whom."""
    edges: dict[str, set[str]] = {folder(module): set() for module in graph.modules}
    for imp in graph.imports:
        if folder(imp.source) != folder(imp.target):
            edges[folder(imp.source)].add(folder(imp.target))
    return edges


def folder_loops(graph: Graph) -> list[tuple[list[str], list[Import]]]:
    """Each loop between top-level folders: its folders, and the imports crossing between
    them."""
    loops = []
    for loop in strongly_connected(folder_successors(graph)):
        crossing = [
            imp
            for imp in graph.imports
            if folder(imp.source) in loop
            and folder(imp.target) in loop
            and folder(imp.source) != folder(imp.target)
        ]
        loops.append((loop, crossing))
    return loops


def upward_imports(graph: Graph) -> list[Import]:
    """The imports from a module of a lower layer to one of a higher layer, those for the
    type checker too (a type named up the layers is a dependency all the same); unassigned
    modules left out: test_every_module_has_a_layer names them."""
    upward = []
    for imp in [*graph.imports, *graph.type_only]:
        source, target = layer_of(imp.source), layer_of(imp.target)
        if source is not None and target is not None and source < target:
            upward.append(imp)
    return upward


def describe_upward(imports: Iterable[Import]) -> str:
    """The upward imports by the layers they cross: "world -> drivers:" and the imports."""
    layers = list(LAYERS)
    crossing: dict[str, list[Import]] = defaultdict(list)
    for imp in imports:
        source, target = layer_of(imp.source), layer_of(imp.target)
        assert source is not None and target is not None
        crossing[f"{layers[source]} -> {layers[target]}"].append(imp)
    return "\n".join(f"{pair}:\n{describe(i)}" for pair, i in sorted(crossing.items()))


def unassigned_modules(graph: Graph) -> list[str]:
    return [module for module in graph.modules if layer_entry(module) is None]


def stale_layer_entries(graph: Graph) -> list[str]:
    """LAYERS entries no module is under (or that are given twice)."""
    entries = [entry for layer in LAYERS.values() for entry in layer]
    return [
        entry
        for entry in entries
        if entries.count(entry) > 1 or not any(is_under(m, entry) for m in graph.modules)
    ]


def realtime_chains(graph: Graph) -> list[list[str]]:
    """For each lockstep or sweep module that reaches the real-time driver, the chain of
    modules by which it does."""
    goals = {m for m in graph.modules if any(is_under(m, e) for e in REALTIME_DRIVER)}
    starts = [m for m in graph.modules if any(is_under(m, e) for e in LOCKSTEP_AND_SWEEP)]
    chains = (graph.chain(start, goals) for start in starts)
    return [chain for chain in chains if chain]


def chain_imports(graph: Graph, chain: list[str]) -> list[Import]:
    """The imports that make ``chain``, in its order."""
    return graph.between(pairwise(chain))


def sensors_on_buses(graph: Graph) -> list[Import]:
    return [
        imp
        for imp in graph.imports
        if is_under(imp.source, SENSORS) and any(is_under(imp.target, e) for e in NOT_FOR_SENSORS)
    ]


def type_only_imports(graph: Graph | None = None) -> str:
    """The imports under ``if TYPE_CHECKING:`` (in no rule), for debugging."""
    return describe((graph or hild_graph()).type_only)


# ---------------------------------------------------------------------------------------------
# The rules
# ---------------------------------------------------------------------------------------------


def test_every_hild_import_names_a_module():
    # an import the graph cannot place would be an edge that no rule sees
    unresolved = hild_graph().unresolved
    if unresolved:
        pytest.fail("imports of hild modules that have no file:\n  " + "\n  ".join(unresolved))


def test_no_import_cycles():
    cycles = module_cycles(hild_graph())
    if cycles:
        listed = "\n\n".join(describe(cycle) for cycle in cycles)
        pytest.fail(f"modules that import each other (a cycle's imports each):\n{listed}")


def test_no_loops_between_folders():
    loops = folder_loops(hild_graph())
    if loops:
        listed = "\n\n".join(f"{' <-> '.join(names)}:\n{describe(i)}" for names, i in loops)
        pytest.fail(f"folders (or top-level modules) that import each other:\n{listed}")


def test_every_module_has_a_layer():
    unassigned = unassigned_modules(hild_graph())
    if unassigned:
        pytest.fail("modules under no entry of LAYERS:\n  " + "\n  ".join(unassigned))


def test_every_layer_entry_names_a_module_or_folder():
    stale = stale_layer_entries(hild_graph())
    if stale:
        pytest.fail(f"LAYERS entries that name nothing under hild/, or are given twice: {stale}")


def test_layers_are_imported_only_downwards():
    upward = [i for i in upward_imports(hild_graph()) if (i.source, i.target) not in ALLOWED_UP]
    if upward:
        pytest.fail(f"imports up the layers (LAYERS, ALLOWED_UP):\n{describe_upward(upward)}")


def test_the_allowed_upward_imports_are_few_and_still_there():
    upward = {(imp.source, imp.target) for imp in upward_imports(hild_graph())}
    assert len(ALLOWED_UP) <= MAX_ALLOWED_UP, f"more than {MAX_ALLOWED_UP} in ALLOWED_UP"
    assert not ALLOWED_UP - upward, f"in ALLOWED_UP, not upward: {sorted(ALLOWED_UP - upward)}"


def test_lockstep_and_sweep_do_not_reach_the_realtime_driver():
    chains = realtime_chains(hild_graph())
    if chains:
        listed = "\n\n".join(
            f"{' -> '.join(chain)}:\n{describe(chain_imports(hild_graph(), chain))}"
            for chain in chains
        )
        pytest.fail(f"lockstep and sweep modules that reach the real-time driver:\n{listed}")


def test_sensors_import_no_bus():
    imports = sensors_on_buses(hild_graph())
    if imports:
        pytest.fail(f"{SENSORS}/ imports {', '.join(NOT_FOR_SENSORS)}:\n{describe(imports)}")


# ---------------------------------------------------------------------------------------------
# The graph reader itself, on a package of its own
# ---------------------------------------------------------------------------------------------

TOY = {
    "hild/__init__.py": "",
    "hild/a/__init__.py": "from . import b\n",
    "hild/a/b.py": "from hild.c import d, ANSWER\n",
    "hild/a/e.py": "import os\nfrom .b import thing\n\n\ndef f():\n    import hild.a\n",
    "hild/c/__init__.py": "ANSWER = 42\n",
    "hild/c/d.py": "def f():\n    from ..a import e\n",
    "hild/c/f.py": (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from hild.a import b\n"
        "else:\n    from hild.c import ANSWER\n"
        "from hild.gone import x\n"
    ),
}


def toy_graph(root: Path) -> Graph:
    for name, text in TOY.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return build_graph(root)


def edges(imports: Iterable[Import]) -> set[tuple[str, str, tuple[str, ...]]]:
    return {(parts(i.source)[-1], "/".join(parts(i.target)), i.names) for i in imports}


def test_the_graph_reads_absolute_relative_lazy_and_type_only_imports(tmp_path):
    graph = toy_graph(tmp_path)
    assert edges(graph.imports) == {
        ("__init__", "a/b", ("b",)),  # from . import b, in a package's __init__
        ("b", "c/d", ("d",)),  # a module imported from its package
        ("b", "c/__init__", ("ANSWER",)),  # a name: from the package's __init__
        ("e", "a/b", ("thing",)),
        ("e", "a/__init__", ("hild.a",)),  # lazy, inside a function
        ("d", "a/e", ("e",)),
        ("f", "c/__init__", ("ANSWER",)),  # the else of `if TYPE_CHECKING:` runs
    }
    assert edges(graph.type_only) == {("f", "a/b", ("b",))}
    assert graph.unresolved == ["hild/c/f.py:6 imports hild.gone"]


def test_cycles_and_folder_loops_are_found(tmp_path):
    graph = toy_graph(tmp_path)
    # a/b -> c/d -> a/e -> a/b, and a/__init__ <-> a/e
    assert [sorted({i.source for i in c}) for c in module_cycles(graph)] == [
        ["hild/a/__init__.py", "hild/a/b.py", "hild/a/e.py", "hild/c/d.py"]
    ]
    assert [names for names, _ in folder_loops(graph)] == [["a", "c"]]
    assert graph.chain("hild/a/b.py", {"hild/a/__init__.py"}) == [
        "hild/a/b.py",
        "hild/c/d.py",
        "hild/a/e.py",
        "hild/a/__init__.py",
    ]


# ---------------------------------------------------------------------------------------------
# Pairs of the core kept apart, module by module
# ---------------------------------------------------------------------------------------------

RULES = [
    ("model", ("hild.environment", "hild.coupled")),
    ("environment", ("hild.model", "hild.coupled")),
    # the port URLs take their default run directory from hild.rundir: not the other way round
    ("rundir", ("hild.transport",)),
    # the tick observers see the world through observers.RunView: none imports a driver
    ("observers", ("hild.drivers",)),
    ("mirror", ("hild.drivers", "hild.world")),
    ("record", ("hild.drivers", "hild.world")),
    ("systemd", ("hild.drivers", "hild.world")),
    ("live", ("hild.drivers", "hild.world")),
    ("runtime", ("hild.drivers", "hild.world")),
    # the world has no clock: it imports no driver
    ("world", ("hild.drivers",)),
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
