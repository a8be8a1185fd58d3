"""The folders of ``warehouse/`` are its layers: a module imports only modules of its own room or of a
room below it, and no modules import each other in a loop.

Every import counts: at the top of a module, inside a function, under ``TYPE_CHECKING``: a lazy import
is still a dependency, and a loop through one is still a loop a reader has to untangle.
"""

from __future__ import annotations

import ast
from pathlib import Path

from .conftest import REPO

#: the rooms, from the ground up; a module of a room may import modules of its own room and of the rooms
#: listed before it. Rooms on one line are beside each other: neither imports the other.
LAYERS = [
    ("ground",),      # errors, URLs and object storage, argument checks, progress, Ctrl-C: no room of ours
    ("tables",),      # the core's tables, declared once
    ("formatkit",),   # what a format builds on: records, readers, Ingestor, the registry, the composed schema
    ("store",),       # the root's files: layout, lock, snapshots, Delta tables, Parquet writing
    ("reading",),     # DuckDB connections with the views, queries, output
    ("run",),         # one ingest run, and the commands that write (compact, upgrade)
    ("exports", "spark"),
    ("viewer",),
    ("face",),        # what a user calls: the Python API and the command line
]

#: top-level modules that are not the ground
TOP = {"tables": "tables", "api": "face", "cli": "face", "__init__": "face", "__main__": "face", "docgen": "face"}
#: folders that are part of a room of another name: the command line's commands are the face
PART_OF = {"commands": "face"}


def room_of(module: str) -> str:
    parts = module.split(".")[1:]  # without "warehouse"
    if not parts:
        return "face"
    if len(parts) == 1 and not (REPO / "warehouse" / parts[0]).is_dir():
        return TOP.get(parts[0], "ground")
    return PART_OF.get(parts[0], parts[0])


def level_of(room: str) -> int:
    return next(i for i, rooms in enumerate(LAYERS) if room in rooms)


def modules(root: Path) -> dict[str, Path]:
    found = {}
    for path in sorted((root / "warehouse").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imports(root: Path) -> dict[str, set[str]]:
    """module -> the modules of ``warehouse`` it imports (anywhere in it)."""
    known = modules(root)
    out: dict[str, set[str]] = {}
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
            for target in targets:
                while target and target not in known:
                    target = target.rpartition(".")[0]
                if target and target != name and target.startswith("warehouse"):
                    found.add(target)
        out[name] = found
    return out


def layer_violations(root: Path) -> list[str]:
    bad = []
    for name, targets in imports(root).items():
        mine = room_of(name)
        for target in sorted(targets):
            theirs = room_of(target)
            if theirs != mine and level_of(theirs) >= level_of(mine):
                bad.append(f"{name} ({mine}) imports {target} ({theirs})")
    return bad


def circles(root: Path) -> list[list[str]]:
    """The loops of imports (strongly connected components of more than one module), Tarjan's way."""
    graph = imports(root)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_each_room_imports_only_its_own_and_the_rooms_below():
    found = layer_violations(REPO)
    assert not found, "imports that run up the layers (tests/test_layers.py LAYERS):\n" + "\n".join(found)


def test_no_modules_import_each_other_in_a_loop():
    found = circles(REPO)
    assert not found, "import loops:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_every_module_is_in_a_room_of_the_layers():
    for name in modules(REPO):
        level_of(room_of(name))  # StopIteration for a folder that is no layer


def test_the_checks_find_an_upward_import_and_a_loop(tmp_path):
    """The checks can fail: a store module importing the run, and two modules importing each other."""
    (tmp_path / "warehouse" / "store").mkdir(parents=True)
    (tmp_path / "warehouse" / "run").mkdir()
    for package in ("warehouse", "warehouse/store", "warehouse/run"):
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "warehouse" / "store" / "delta.py").write_text("from warehouse.run import commit\n")
    (tmp_path / "warehouse" / "run" / "commit.py").write_text("def f():\n    from ..store import delta\n")
    assert layer_violations(tmp_path) == ["warehouse.store.delta (store) imports warehouse.run.commit (run)"]
    assert circles(tmp_path) == [["warehouse.run.commit", "warehouse.store.delta"]]


def test_a_modules_old_name_imports_the_module_at_its_new_place_with_a_warning():
    """A format written against the flat layout (``from warehouse.readers import SourceFile``) still loads."""
    import subprocess
    import sys

    code = ("import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
            "try:\n    import warehouse.readers\nexcept DeprecationWarning as w:\n    print(w)\n"
            "warnings.simplefilter('ignore')\n"
            "from warehouse.readers import SourceFile\nimport warehouse.formatkit.readers as new\n"
            "print(SourceFile is new.SourceFile, new.__spec__.name)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == ["warehouse.readers is now warehouse.formatkit.readers: import it from there (the old name goes "
                   "in the next release)", "True warehouse.formatkit.readers"]


#: the tests of the whole project, not of one room: they stay at the top of tests/
WHOLE = {"test_architecture", "test_docs", "test_install", "test_layers", "test_notebooks", "test_packaging",
         "test_realdata"}


def test_the_tests_are_in_the_rooms_they_test():
    """tests/ mirrors warehouse/: a folder per room (``formats`` for the formats' own tests, ``ground`` for the
    modules at the top of warehouse/, ``commands`` for the command line and the Python API), and at the top
    only the checks of the whole project."""
    tests = REPO / "tests"
    rooms = {p.name for p in (REPO / "warehouse").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    folders = {p.name for p in tests.iterdir() if p.is_dir() and any(p.glob("test_*.py"))}
    assert folders <= rooms | {"formats", "ground"}, folders - rooms
    assert {p.stem for p in tests.glob("test_*.py")} == WHOLE
