"""The installed formats: entry points of one group, listed without importing them, loaded on demand.

A format is registered by the distribution that ships it, in its pyproject.toml::

    [project.entry-points."warehouse.formats"]
    my_format = "my_package:MyFormat"        # the --format name = "module:Ingestor subclass"

The formats that come with the warehouse are registered the same way, so the core
never imports a format, nor names one: it asks this registry. Listing names reads
the installed distributions' metadata only; a format's module is imported the first
time something needs it (detection needs them all; ``--format X`` needs X alone).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING

from warehouse.errors import FormatError, UsageError

if TYPE_CHECKING:
    from warehouse.formatkit.exporter import ExportFormat
    from warehouse.formatkit.ingestor import Ingestor

#: the entry-point group formats register in
GROUP = "warehouse.formats"


@dataclass(frozen=True)
class Registry:
    """Format names and where each is defined (``module:Class``). Plain data: a run hands it to
    its worker processes, which load the formats from it."""

    refs: tuple[tuple[str, str], ...]  # (name, "module:Class"), sorted by name

    @classmethod
    def installed(cls) -> Registry:
        """The formats registered by the installed distributions (read once per process)."""
        return _installed()

    @classmethod
    def of(cls, refs: Mapping[str, str]) -> Registry:
        """A registry of these formats only (``{name: "module:Class"}``), for tests and embedding.
        Its formats may add no columns, tables or views: readers know only the installed ones."""
        return cls(tuple(sorted(refs.items())))

    def names(self) -> list[str]:
        """The format names, sorted, without importing any format."""
        return [name for name, _ in self.refs]

    def load(self, name: str) -> Ingestor:
        """The format called ``name``. Raises UsageError naming the installed ones when there is none."""
        for n, ref in self.refs:
            if n == name:
                return _checked(n, ref)
        raise UsageError(f"unknown format {name!r}; installed formats: {', '.join(self.names()) or 'none'}")

    def ingestors(self) -> list[Ingestor]:
        """Every format, loaded, in detection order (ascending ``priority``, then name)."""
        return sorted((_checked(n, ref) for n, ref in self.refs), key=lambda i: (i.priority, i.name))

    def exporters(self) -> list[ExportFormat]:
        """The export formats back to the sources: each format's ``exporter``, in detection order."""
        return [i.exporter for i in self.ingestors() if i.exporter is not None]


def listed() -> Registry | None:
    """``Registry.installed()`` when this process has listed the installed formats already, else None."""
    return _installed() if _installed.cache_info().currsize else None


@functools.cache
def _installed() -> Registry:
    refs: dict[str, str] = {}
    for ep in entry_points(group=GROUP):
        if refs.get(ep.name, ep.value) != ep.value:
            dists = sorted(d.name for d in _distributions_registering(ep.name))
            raise FormatError(
                f"format {ep.name!r} is registered twice ({refs[ep.name]} and {ep.value}, by {', '.join(dists)}); "
                "uninstall one of them"
            )
        refs[ep.name] = ep.value
    return Registry.of(refs)


def _distributions_registering(name: str):
    from importlib.metadata import distributions

    return [d for d in distributions() if any(ep.group == GROUP and ep.name == name for ep in d.entry_points)]


def _checked(name: str, ref: str) -> Ingestor:
    ingestor = _load(name, ref)
    if (ingestor.columns or ingestor.tables or ingestor.views or ingestor.defines) \
            and (name, ref) not in _installed().refs:
        raise FormatError(
            f"format {name!r} ({ref}) adds columns, tables or views but is not installed: register it as an "
            f"entry point in the group {GROUP!r} so every reader of the warehouse knows them"
        )
    return ingestor


@functools.cache
def _load(name: str, ref: str) -> Ingestor:
    from warehouse.formatkit.ingestor import DEFINABLE_VIEWS, Ingestor

    try:
        cls = EntryPoint(name, ref, GROUP).load()
    except Exception as e:
        raise FormatError(
            f"format {name!r} ({ref}) failed to load: {type(e).__name__}: {e}; "
            "fix or uninstall the package that registers it"
        ) from e
    if not (isinstance(cls, type) and issubclass(cls, Ingestor)):
        raise FormatError(f"format {name!r}: {ref} is not an Ingestor subclass (warehouse.formatkit.ingestor.Ingestor)")
    if getattr(cls, "name", None) != name:
        raise FormatError(f"format {name!r}: {ref}.name is {getattr(cls, 'name', None)!r}; the entry point's name "
                          "and the class's name must be the same (it is the --format value)")
    unknown = sorted(set(cls.defines) - set(DEFINABLE_VIEWS))
    if unknown:
        raise FormatError(f"format {name!r}: defines the views {', '.join(unknown)}, which are not the core's to leave "
                          f"to a format (Ingestor.defines may give: {', '.join(DEFINABLE_VIEWS)}); make them its own "
                          "views (Ingestor.views)")
    if cls.fast_path and cls.fast_lines is Ingestor.fast_lines:
        raise FormatError(f"format {name!r}: declares fast_path = True but does not implement fast_lines")
    return cls()
