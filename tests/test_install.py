"""What is installed lives under ``warehouse``: a wheel and an editable install each expose the
formats as ``warehouse.formats``, ship the view definitions, and install no top-level ``ingest``,
so a user's own ``ingest.py`` neither breaks the warehouse nor is imported by it.

Each install goes into a fresh venv; the project's dependencies come from this test run's
environment (a ``.pth`` line), so nothing is downloaded.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import tomllib
from pathlib import Path

import pytest

import warehouse

from .conftest import FIXTURES, REPO

pytestmark = pytest.mark.slow

#: what a build reads
SOURCES = ("pyproject.toml", "README.md", "warehouse", "ingest", "sql")


def _copy_sources(dst: Path) -> Path:
    """The project's files, copied: a build writes build/ and *.egg-info beside them, never into the checkout."""
    dst.mkdir(parents=True)
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, dst / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(REPO / name, dst / name)
    return dst


def _venv(path: Path) -> Path:
    """A new venv whose only other packages are this environment's (read-only, through a .pth line)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    python = path / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(site) / "_dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")
    return python


def _pip(python: Path, *args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), *args, "--no-deps", "--no-index",
                           "--no-build-isolation", "--disable-pip-version-check", "-q"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def wheel_python(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    src = _copy_sources(work / "src")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-index",
                           "--no-build-isolation", "-q", "-w", str(work / "dist")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    [wheel] = (work / "dist").glob("*.whl")
    python = _venv(work / "venv")
    _pip(python, "install", str(wheel))
    return python


@pytest.fixture(scope="module")
def editable_python(tmp_path_factory) -> tuple[Path, Path]:
    work = tmp_path_factory.mktemp("editable")
    src = _copy_sources(work / "src")
    python = _venv(work / "venv")
    _pip(python, "install", "-e", str(src))
    return python, src


INSPECT = textwrap.dedent("""
    import importlib, json, pkgutil
    import warehouse, warehouse.formats
    from warehouse.formatkit.registry import Registry
    from warehouse.formatkit.declared_views import sql_dir
    # warehouse.formats is a folder of its own in an editable install (a finder maps it): walk both
    modules = sorted({"warehouse.formats"}
                     | {m.name for m in pkgutil.walk_packages(warehouse.__path__, "warehouse.")}
                     | {m.name for m in pkgutil.walk_packages(warehouse.formats.__path__, "warehouse.formats.")})
    for m in modules:
        importlib.import_module(m)
    try:
        import ingest
        top_level_ingest = ingest.__file__
    except ImportError:
        top_level_ingest = None
    print(json.dumps({"warehouse": warehouse.__file__, "formats": warehouse.formats.__file__, "modules": modules,
                      "ingest": top_level_ingest, "version": warehouse.__version__, "sql": str(sql_dir()),
                      "registered": Registry.installed().names()}))
""")


def _inspect(python: Path, cwd: Path) -> dict:
    done = subprocess.run([python, "-c", INSPECT], capture_output=True, text=True, cwd=cwd, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _repo_modules() -> list[str]:
    """Every module of the checkout, by the name it is installed under."""
    names = []
    for folder, package in (("warehouse", "warehouse"), ("ingest", "warehouse.formats")):
        for path in (REPO / folder).rglob("*.py"):
            parts = path.relative_to(REPO / folder).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            names.append(".".join((package, *parts)))
    return sorted(set(names) - {"warehouse"})


def _queries_views(python: Path, tmp_path: Path) -> None:
    """The installed console script ingests and its views (from the shipped sql/) answer."""
    exe = python.parent / "warehouse"
    assert subprocess.run([exe, "--version"], capture_output=True, text=True, check=True).stdout == (
        f"warehouse {warehouse.__version__}\n")
    root = tmp_path / "wh"
    subprocess.run([exe, "ingest", str(FIXTURES / "trait_interp"), "--root", str(root), "--quiet"], check=True,
                   cwd=tmp_path, timeout=300)
    out = subprocess.run([exe, "sql", "SELECT (SELECT count(*) FROM prompts) AS prompts, "
                                      "(SELECT count(*) FROM responses WHERE experiment IS NOT NULL) AS responses",
                          "--root", str(root), "--format", "json"], capture_output=True, text=True, check=True, cwd=tmp_path)
    [counts] = json.loads(out.stdout)
    assert counts["prompts"] > 0 and counts["responses"] > 0, counts


def test_a_wheel_installs_the_formats_under_warehouse_and_no_ingest(wheel_python, tmp_path):
    seen = _inspect(wheel_python, tmp_path)
    site = str(wheel_python.parent.parent)
    assert seen["ingest"] is None
    assert seen["formats"].startswith(site) and seen["formats"].endswith("warehouse/formats/__init__.py")
    assert seen["sql"].startswith(site) and seen["sql"].endswith("warehouse/_sql")
    assert seen["modules"] == _repo_modules()  # every module of the checkout, and nothing else
    assert seen["version"] == warehouse.__version__
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]["warehouse.formats"]
    assert seen["registered"] == sorted(declared)  # every format the project declares, registered by the wheel
    _queries_views(wheel_python, tmp_path)


def test_an_editable_install_maps_the_formats_folder_and_installs_no_ingest(editable_python, tmp_path):
    python, src = editable_python
    seen = _inspect(python, tmp_path)
    assert seen["ingest"] is None
    assert seen["formats"] == str(src / "ingest" / "__init__.py")  # edits in ingest/ are live
    assert seen["warehouse"] == str(src / "warehouse" / "__init__.py")
    assert seen["modules"] == _repo_modules()
    _queries_views(python, tmp_path)


#: a notebook or script folder with its own ingest.py
USER_INGEST = 'print("the user\'s ingest.py was imported")\nINGESTORS = EXPORT_FORMATS = "the user\'s"\n'
USE = textwrap.dedent("""
    import sys, warehouse
    root, out = sys.argv[1], sys.argv[2]
    summary = warehouse.ingest(sys.argv[3], root, progress=False)
    print("ingested", summary.records_ingested)
    print("exported", warehouse.export(root, None, "trait_interp", out, progress=False).written)
    print("exported", warehouse.export(root, None, "jsonl", out + ".jsonl", progress=False).written)
""")


def _beside_user_ingest(python: Path, tmp_path: Path) -> str:
    folder = tmp_path / "notebooks"
    folder.mkdir()
    (folder / "ingest.py").write_text(USER_INGEST)
    (folder / "use.py").write_text(USE)
    done = subprocess.run([python, "use.py", str(tmp_path / "wh"), str(tmp_path / "out"), str(FIXTURES / "trait_interp")],
                          capture_output=True, text=True, cwd=folder, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("install", ["this environment", "wheel", "editable"])
def test_a_users_own_ingest_py_changes_nothing(install, tmp_path, request):
    python = {"this environment": lambda: Path(sys.executable), "wheel": lambda: request.getfixturevalue("wheel_python"),
              "editable": lambda: request.getfixturevalue("editable_python")[0]}[install]()
    out = _beside_user_ingest(python, tmp_path)
    assert "the user's ingest.py was imported" not in out
    lines = out.splitlines()
    assert lines[0].startswith("ingested ") and int(lines[0].split()[1]) > 0, out
    assert int(lines[1].split()[1]) > 0 and int(lines[2].split()[1]) > 0, out
