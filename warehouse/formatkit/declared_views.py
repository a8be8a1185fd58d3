"""The views as this installation has them: the core's (the files of ``sql/``, one view each, in name order),
with the statement of the first installed format that defines one of them (``Ingestor.defines``), then the
installed formats' own views (``Ingestor.views``), which may read any of those (``view_statements``).

The core's SQL knows no format; this module is where the registry's formats join it, as ``declared.py``
joins their tables to the core's.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

#: the table path-derived fields are materialised in, one row per source path (joined on source_path); also
#: the name of the view that derives them (``sql/10_path_fields.sql``, or a format's: ``Ingestor.defines``)
PATH_FIELDS = "path_fields"


def sql_dir() -> Path:
    here = Path(__file__).resolve().parent.parent  # warehouse/
    for candidate in (here.parent / "sql", here / "_sql"):  # source checkout, then wheel
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("the sql/ directory of view definitions is missing from this installation")


def view_files() -> list[Path]:
    """The core's view files, one view each, in the order they are made."""
    return sorted(sql_dir().glob("*.sql"))


def view_name(statement: str) -> str:
    """The view a ``CREATE OR REPLACE VIEW`` statement makes."""
    return re.search(r"CREATE OR REPLACE VIEW (\w+)", statement).group(1)


def view_statements() -> list[tuple[str, str]]:
    """(view name, statement) of every view, in the order they are made: the core's (``view_files``), the
    ones a format defines (``Ingestor.defines``) by its statement, then the formats' own (``format_views``)."""
    defined = format_defines()
    core = [(view_name(text), text) for text in (path.read_text() for path in view_files())]
    return [(name, defined.get(name, text)) for name, text in core] + [(view_name(v), v) for v in format_views()]


def format_defines() -> dict[str, str]:
    """The core's views the installed formats define, ``{name: statement}``: the first format's, in detection order."""
    from warehouse.formatkit.registry import Registry

    defined: dict[str, str] = {}
    for ingestor in Registry.installed().ingestors():
        for name, statement in ingestor.defines.items():
            defined.setdefault(name, statement)
    return defined


def format_views() -> list[str]:
    """The installed formats' own view statements, in detection order."""
    from warehouse.formatkit.registry import Registry

    return [v for i in Registry.installed().ingestors() for v in i.views]


def path_fields_statement() -> str:
    """The statement of ``path_fields`` in use: the installed format's that defines it, else the core's."""
    return format_defines().get(PATH_FIELDS) or (sql_dir() / "10_path_fields.sql").read_text()


def path_fields_sql_hash() -> str:
    """What a materialised path_fields was made by: the copy is read only while the statement is the same."""
    return hashlib.sha256(path_fields_statement().encode()).hexdigest()
