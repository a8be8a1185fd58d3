"""The core knows no format: ``warehouse/`` imports no format package and names no format, nor does ``sql/``.

Formats plug in through entry points (``warehouse/formatkit/registry.py``); what one offers the
core reads from the ``Ingestor`` contract. A rule only written down drifts, so this
walks every module of ``warehouse/`` (its syntax tree, and its comments) and every view
file of ``sql/`` (comments included), and fails on:

* an import of a format package (``ingest``, ``warehouse.formats``, relative or not,
  or by name in a string such as ``"module:attribute"``);
* a format's name (``trait_interp``, ``trait-interp``, ``TraitInterp``, ...) in an
  identifier, a string, a docstring or a comment;
* a table only a format declares (``raw.generation_metadata``), read by the core's SQL or
  named in a query of its Python: a format's views live in its package (``Ingestor.views``).

The only mention allowed is the registry's entry-point group name, ``warehouse.formats``.
"""

from __future__ import annotations

import ast
import builtins
import io
import re
import tokenize
from pathlib import Path

from warehouse.formatkit.registry import GROUP, Registry

from .conftest import REPO

#: the folder ingest/ is installed as warehouse.formats: both names are format packages
FORMAT_PACKAGES = ("ingest", "warehouse.formats")
#: a package named in a string as an import target: "ingest:INGESTORS", "warehouse.formats.scale"
PACKAGE_IN_TEXT = re.compile(r"(?<![\w.])(?:ingest|warehouse\.formats)[.:]\w")
#: words of the core that hold a format's name by chance, and mean something else
NOT_A_FORMAT = (
    "score_scale",  # evaluations.score_scale: the range a score is given on
    "final_score_scale",  # the same, of a final score (response_grades, dpo_pairs), and of each answer of a pair:
    "chosen_final_score_scale",
    "rejected_final_score_scale",
    "unit_scale",  # tqdm's keyword
)


def format_names() -> list[str]:
    """Every installed format's name and class name: those are what the core must not say."""
    names = set(Registry.installed().names())
    names |= {type(i).__name__ for i in Registry.installed().ingestors()}
    return sorted(names)


def name_pattern(names: list[str]) -> re.Pattern:
    """A format name as a word, however it is written: trait_interp, trait-interp, Trait Interp, TraitInterp."""
    spellings = []
    for name in names:
        parts = [p for p in re.split(r"[_\- ]+|(?<=[a-z])(?=[A-Z])", name) if p]
        spellings.append(r"[-_ ]?".join(re.escape(p) for p in parts))
    return re.compile(r"(?<![A-Za-z0-9])(?:" + "|".join(spellings) + r")(?![A-Za-z0-9])", re.IGNORECASE)


def _package_of(path: Path, root: Path) -> list[str]:
    """The package a module is in (for ``__init__.py``, its own): what its relative imports start from."""
    return list(path.relative_to(root.parent).with_suffix("").parts[:-1])


def _imported(node: ast.AST, package: list[str]) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:  # relative: from the file's package, up level - 1
            up = package[: len(package) - (node.level - 1)] if node.level > 1 else package
            base = ".".join([*up, *([base] if base else [])])
        return [base] + [f"{base}.{a.name}" for a in node.names]
    return []


def _texts(node: ast.AST) -> list[str]:
    """Identifiers and string constants a node holds itself."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.keyword) and node.arg:
        return [node.arg]
    if isinstance(node, ast.alias):
        return [node.name, node.asname or ""]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    return []


def format_tables() -> list[str]:
    """The tables only formats declare (``Ingestor.tables``): the core's SQL reads none of them."""
    return sorted({t.name for i in Registry.installed().ingestors() for t in i.tables})


def _table_pattern(tables: list[str]) -> re.Pattern:
    """A table's name in SQL, as a relation of a query (``raw.x``, or ``x`` alone in SQL code)."""
    return re.compile(r"(?<![\w.])(?:raw\.)?(" + "|".join(map(re.escape, tables)) + r")(?![\w])", re.IGNORECASE)


#: a table as a query in Python reads it: ``raw.x``, ``FROM x``, ``JOIN x``
def _query_table_pattern(tables: list[str]) -> re.Pattern:
    return re.compile(r"(?:(?<![\w.])raw\.|\b(?:FROM|JOIN)\s+)(" + "|".join(map(re.escape, tables)) + r")(?![\w])",
                      re.IGNORECASE)


#: a string literal of SQL ('' inside is a quote): its text is data, not a relation
SQL_STRING = re.compile(r"'(?:[^']|'')*'")


def sql_violations(root: Path) -> list[str]:
    """``file:line: what`` for every format name (comments included) and every table only a format declares
    (outside comments and string literals) in the ``.sql`` files under ``root``."""
    pattern, tables = name_pattern(format_names()), _table_pattern(format_tables())
    found = []
    for path in sorted(root.rglob("*.sql")):
        where = path.relative_to(root.parent)
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(_without_allowed(line)):
                found.append(f"{where}:{n}: names the format {pattern.search(_without_allowed(line)).group(0)!r}")
            code = SQL_STRING.sub("''", line).split("--", 1)[0]
            if tables.search(code):
                found.append(f"{where}:{n}: reads the table {tables.search(code).group(1)!r}, which only a format "
                             "declares (make the view the format's: Ingestor.views)")
    return found


def violations(root: Path) -> list[str]:
    """``file:line: what`` for every import of a format package and every format name under ``root``."""
    pattern, tables = name_pattern(format_names()), _query_table_pattern(format_tables())
    found = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(root.parent)
        package = _package_of(path, root)
        for node in ast.walk(ast.parse(text, str(path))):
            for module in _imported(node, package):
                if any(module == p or module.startswith(p + ".") for p in FORMAT_PACKAGES):
                    found.append(f"{where}:{node.lineno}: imports the format package {module}")
            for t in _texts(node):
                t = _without_allowed(t)
                line = getattr(node, "lineno", "?")
                if PACKAGE_IN_TEXT.search(t):
                    found.append(f"{where}:{line}: names a format package: {PACKAGE_IN_TEXT.search(t).group(0)!r}")
                if pattern.search(t):
                    found.append(f"{where}:{line}: names the format {pattern.search(t).group(0)!r}")
                if isinstance(node, ast.Constant) and tables.search(t):
                    found.append(f"{where}:{line}: a query reads the table {tables.search(t).group(1)!r}, which "
                                 "only a format declares")
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT and pattern.search(_without_allowed(tok.string)):
                found.append(f"{where}:{tok.start[0]}: a comment names the format "
                             f"{pattern.search(_without_allowed(tok.string)).group(0)!r}")
    return found


def _without_allowed(text: str) -> str:
    text = text.replace(GROUP, "")  # the entry-point group is the one name the core may say
    for word in NOT_A_FORMAT:
        text = re.sub(rf"(?<![A-Za-z0-9_]){word}(?![A-Za-z0-9_])", "", text)
    return text


def test_the_core_imports_no_format_and_names_none():
    found = violations(REPO / "warehouse")
    assert not found, "warehouse/ must know no format (use the Ingestor contract and the registry):\n" + "\n".join(found)


def test_the_core_sql_names_no_format_and_reads_no_format_table():
    assert list((REPO / "sql").glob("*.sql")), "no view files where the core keeps them"
    found = sql_violations(REPO / "sql")
    assert not found, ("sql/ must know no format (a format's views are its own: Ingestor.views, Ingestor.defines):\n"
                       + "\n".join(found))


def test_the_sql_check_finds_each_kind_of_mention(tmp_path):
    """The check of sql/ can fail: a format named in a comment or in code, a format's table read."""
    sql = tmp_path / "sql"
    sql.mkdir()
    (sql / "20_responses.sql").write_text(
        "-- responses, with the generation parameters of trait-interp extraction\n"
        "CREATE OR REPLACE VIEW responses AS\n"
        "SELECT r.*, gm.params FROM raw.responses AS r\n"
        "LEFT JOIN raw.generation_metadata AS gm ON gm.responses_dir = r.source_path\n"
        "WHERE r.source_format <> 'scale'  -- a string of the SQL is looked at too\n"
        "AND r.source_path NOT LIKE '%/chunks/%' -- a table's name as data or prose is fine: chunks\n")
    (sql / "30_x.sql").write_text("CREATE OR REPLACE VIEW x AS SELECT * FROM prompts")
    found = "\n".join(sql_violations(sql))
    for expected in (
        "sql/20_responses.sql:1: names the format 'trait-interp'",
        "sql/20_responses.sql:4: reads the table 'generation_metadata'",
        "sql/20_responses.sql:5: names the format 'scale'",
        "sql/30_x.sql:1: reads the table 'prompts'",
    ):
        assert expected in found, (expected, found)
    assert ":2:" not in found and ":3:" not in found and ":6:" not in found, found


def test_the_check_finds_each_kind_of_mention(tmp_path):
    """The walk above can fail: each way today's code named a format is caught."""
    core = tmp_path / "warehouse"
    (core / "exports").mkdir(parents=True)
    (core / "__init__.py").write_text('def export():\n    from ingest import EXPORT_FORMATS\n')
    (core / "runner.py").write_text('REF = "ingest:INGESTORS"\n')
    (core / "cli.py").write_text('def f():\n    from .formats.scale import Scale\n')
    (core / "tables.py").write_text('RESPONSE_COLUMNS_AFTERIMAGE = ()\nQ = "SELECT * FROM raw.prompts"\n'
                                    'STATS = "SELECT count(*) FROM annotation_sets"  # chunks of a file: a word\n')
    (core / "exports" / "generic.py").write_text(
        '"""The raw prompt of trait-interp inference responses."""\n# one row per part (Dataloop prompts)\n'
        'GROUP = "warehouse.formats"  # the group name alone is fine, and score_scale\n'
        'def f(ti: "TraitInterp"):\n    from ..formats import fields\n')
    found = "\n".join(violations(core))
    for expected in (
        "warehouse/__init__.py:2: imports the format package ingest",
        "warehouse/runner.py:1: names a format package: 'ingest:I'",
        "warehouse/cli.py:2: imports the format package warehouse.formats.scale",
        "warehouse/tables.py:1: names the format 'AFTERIMAGE'",
        "warehouse/tables.py:2: a query reads the table 'prompts'",
        "warehouse/tables.py:3: a query reads the table 'annotation_sets'",
        "warehouse/exports/generic.py:1: names the format 'trait-interp'",
        "warehouse/exports/generic.py:2: a comment names the format 'Dataloop'",
        "warehouse/exports/generic.py:4: names the format 'TraitInterp'",
        "warehouse/exports/generic.py:5: imports the format package warehouse.formats",
    ):
        assert expected in found, (expected, found)
    assert "generic.py:3:" not in found, found  # the entry-point group's name is allowed


def test_formats_never_import_each_other():
    """A format package imports the core and the shared helpers (fields, spans, tokenizers), never another format."""
    formats = {p.name for p in (REPO / "ingest").iterdir() if (p / "__init__.py").exists()} | {"activations"}
    for package in sorted(formats):
        files = [REPO / "ingest" / f"{package}.py"] if package == "activations" else (REPO / "ingest" / package).rglob("*.py")
        for path in files:
            parts = ["warehouse", "formats", *path.relative_to(REPO / "ingest").with_suffix("").parts]
            pkg = parts[:-1]
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                for module in _imported(node, pkg):
                    other = next((f for f in formats - {package} if module.startswith(f"warehouse.formats.{f}")), None)
                    assert other is None, f"{path.relative_to(REPO)}:{node.lineno} imports the format {other}"


# --- formats export with the kit alone ----------------------------------------------------------------------

#: the one module of the export machinery a format may import (``from warehouse.exports import kit``)
KIT = "warehouse.exports.kit"


def kit_violations(root: Path) -> list[str]:
    """``file:line: what`` for every import of the export machinery other than the kit (``generic``, or the
    modules behind the kit), and every private name (``_x``) taken from the core, under ``root``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root.parent)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("warehouse.exports") and a.name != KIT:
                        found.append(f"{where}:{node.lineno}: imports {a.name}; use {KIT}")
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("warehouse"):
                module = node.module
                for a in node.names:
                    target = f"{module}.{a.name}"
                    if module == "warehouse.exports" and target != KIT or (
                            module.startswith("warehouse.exports.") and module != KIT):
                        found.append(f"{where}:{node.lineno}: imports {target}; use {KIT}")
                    elif a.name.startswith("_"):
                        found.append(f"{where}:{node.lineno}: imports the private {target}")
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "kit" \
                    and node.attr.startswith("_"):
                found.append(f"{where}:{node.lineno}: uses the private kit.{node.attr}")
    return found


def test_formats_export_with_the_public_kit_alone():
    """Every format's exporter (and the shared helpers) reach the export machinery through the kit only,
    and take nothing private of the core: what a format may use is one module, documented."""
    found = kit_violations(REPO / "ingest")
    assert not found, f"format packages must use {KIT} only (docs/export.md#writing-an-exporter):\n" + "\n".join(found)


def test_the_kit_check_finds_each_kind_of_reach(tmp_path):
    """The walk above can fail: each way a format reached past the kit is caught."""
    pkg = tmp_path / "ingest" / "fmt"
    pkg.mkdir(parents=True)
    (pkg / "export.py").write_text(
        "from warehouse.exports.generic import BATCH, belonging\n"
        "from warehouse.exports import ExportContext, jsontext, kit\n"
        "import warehouse.exports.conversation\n"
        "from warehouse.formatkit.readers import _private\n"
        "x = kit._parent('turns')\n"
        "from warehouse.exports.kit import stage\n")
    found = "\n".join(kit_violations(tmp_path / "ingest"))
    for expected in (
        "ingest/fmt/export.py:1: imports warehouse.exports.generic.BATCH",
        "ingest/fmt/export.py:2: imports warehouse.exports.ExportContext",
        "ingest/fmt/export.py:2: imports warehouse.exports.jsontext",
        "ingest/fmt/export.py:3: imports warehouse.exports.conversation",
        "ingest/fmt/export.py:4: imports the private warehouse.formatkit.readers._private",
        "ingest/fmt/export.py:5: uses the private kit._parent",
    ):
        assert expected in found, (expected, found)
    assert ":6:" not in found and "warehouse.exports.kit;" not in found, found


def test_every_format_that_exports_keeps_its_inverse_mapping_in_unmap():
    """Rows back to a format's own shape (the inverse of its ``map``) have one name in every package:
    ``<package>.unmap``; the exporter (``export``) stages and writes, ``foreign`` maps other formats."""
    import importlib.util

    exporting = [i for i in Registry.installed().ingestors() if i.exporter is not None]
    assert exporting
    for ingestor in exporting:
        package = type(ingestor).__module__
        assert importlib.util.find_spec(f"{package}.unmap") is not None, f"{package} has no unmap module"
        assert importlib.util.find_spec(f"{package}.export") is not None, f"{package} has no export module"


# --- every exception in one module ---------------------------------------------------------------------------

#: the module every exception the core raises on purpose is defined in
ERRORS = "errors.py"


def _is_exception_base(base: ast.expr, ours: set[str]) -> bool:
    """A base class that makes a class an exception: a builtin one (``ValueError``), one of errors.py's,
    or a library's by its conventional name (``pa.ArrowException``, ``DeltaError``)."""
    name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else ""
    builtin = getattr(builtins, name, None)
    return (name in ours or (isinstance(builtin, type) and issubclass(builtin, BaseException))
            or re.search(r"(Error|Exception)$", name) is not None)


def exceptions_outside_errors(root: Path) -> list[str]:
    """``file:line: class`` for every exception class under ``root`` defined in another module than errors.py."""
    ours = {node.name for node in ast.walk(ast.parse((root / ERRORS).read_text(encoding="utf-8")))
            if isinstance(node, ast.ClassDef)}
    found = []
    for path in sorted(root.rglob("*.py")):
        if path == root / ERRORS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ClassDef) and any(_is_exception_base(b, ours) for b in node.bases):
                found.append(f"{path.relative_to(root.parent)}:{node.lineno}: {node.name}")
    return found


def test_every_exception_of_the_core_is_defined_in_errors():
    """One place to learn what the core raises and what each means (and exits with): warehouse/errors.py.
    Other modules import their exceptions from it (and re-export what formats use: records.RecordError)."""
    found = exceptions_outside_errors(REPO / "warehouse")
    assert not found, "define these in warehouse/errors.py:\n" + "\n".join(found)


def test_the_exception_check_finds_each_kind_of_base(tmp_path):
    """The walk above can fail: an exception derived from a builtin, from errors.py's, or from a library's."""
    core = tmp_path / "warehouse"
    (core / "viewer").mkdir(parents=True)
    (core / ERRORS).write_text("class WarehouseError(Exception):\n    pass\n")
    (core / "pool.py").write_text("class Lost(Exception):\n    pass\n\n\nclass Plain:\n    pass\n")
    (core / "viewer" / "data.py").write_text("class Gone(KeyError):\n    pass\nclass Mine(WarehouseError):\n    pass\n")
    (core / "writer.py").write_text("import pyarrow as pa\nclass Bad(pa.ArrowException):\n    pass\n")
    found = exceptions_outside_errors(core)
    assert found == ["warehouse/pool.py:1: Lost", "warehouse/viewer/data.py:1: Gone",
                     "warehouse/viewer/data.py:3: Mine", "warehouse/writer.py:2: Bad"], found
