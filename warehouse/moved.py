"""Old names that still work for one release, each with a ``DeprecationWarning`` that names the new one.

**Modules**, from before ``warehouse/`` was grouped into rooms: a third-party format written against the flat
names (``readers``, ``records``, ``ingestor`` directly under ``warehouse``) keeps loading: importing an old name
gives the module at its new place (the same module object, so ``isinstance`` and monkeypatching see one thing).

**Keywords**, from before ``format=`` was split into its three meanings (``renamed_keyword``): the format a
source is read as (``source_format``), the format a result is printed in (``output_format``) and the format an
export writes (``export_format``). The command line keeps ``--format`` for each.
"""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.util
import sys
import warnings

#: old module name -> where it lives now
MOVED = {
    f"warehouse.{old}": f"warehouse.{new}"
    for old, new in {
        "records": "formatkit.records", "readers": "formatkit.readers", "dependencies": "formatkit.dependencies",
        "ingestor": "formatkit.ingestor", "registry": "formatkit.registry",
        "storage": "store.storage", "delta": "store.delta", "writer": "store.writer",
        "runner": "run.runner", "discover": "run.discover", "encodings": "run.encodings", "catalog": "run.catalog",
        "pieces": "run.pieces", "pool": "run.pool", "worker": "run.worker", "sink": "run.sink",
        "commit": "run.commit", "damage": "run.damage", "summary": "run.summary", "upgrade": "run.upgrade",
        "maintenance": "run.maintenance", "process_settings": "run.process_settings",
        "views": "reading.views", "query": "reading.query", "output": "reading.output", "texttable": "reading.texttable",
    }.items()
}


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self):
        self._specs = {}

    def find_spec(self, name, path=None, target=None):
        if name in MOVED:
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        warnings.warn(f"{spec.name} is now {MOVED[spec.name]}: import it from there (the old name goes in the "
                      "next release)", DeprecationWarning, stacklevel=2)
        module = importlib.import_module(MOVED[spec.name])
        self._specs[module.__name__] = module.__spec__  # the import system sets __spec__ to the old name's next
        return module

    def exec_module(self, module):
        module.__spec__ = self._specs[module.__name__]  # the module at its new place ran already: keep its own spec


def install() -> None:
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.append(_Alias())


def renamed_keyword(old: str, new: str):
    """The decorated function's keyword ``old`` is now ``new``: a call with ``old=`` still works, with a
    DeprecationWarning; a call with both is a TypeError, as for any keyword given twice."""

    def wrap(fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            if old in kwargs:
                if new in kwargs:
                    raise TypeError(f"{fn.__name__}() got {old}= and {new}=: {old}= is the old name of {new}=")
                warnings.warn(f"{fn.__name__}({old}=...) is now {fn.__name__}({new}=...)", DeprecationWarning,
                              stacklevel=2)
                kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)

        return call

    return wrap


def renamed_attribute(old: str, new: str) -> property:
    """A class's attribute ``old``, now ``new``: reading ``old`` gives ``new``'s value, with a DeprecationWarning."""

    def get(self):
        warnings.warn(f"{type(self).__name__}.{old} is now {type(self).__name__}.{new}", DeprecationWarning,
                      stacklevel=2)
        return getattr(self, new)

    return property(get, doc=f"The old name of ``{new}``.")
