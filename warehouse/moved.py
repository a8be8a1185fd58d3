"""The modules' old names, from before ``warehouse/`` was grouped into rooms, still import for one release.

A third-party format written against the flat names (``readers``, ``records``, ``ingestor`` directly under
``warehouse``) keeps loading: importing an old name gives the module at its new place (the same module object, so
``isinstance`` and monkeypatching see one thing) and a ``DeprecationWarning`` that names the new place.
"""

from __future__ import annotations

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
