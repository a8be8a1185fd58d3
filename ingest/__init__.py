"""The formats that come with the warehouse, installed as the package ``warehouse.formats``.

One package per format (``afterimage``, ``dataloop``, ``inspect``, ``scale``, ``trait_interp``, and
the module ``activations``), each with one ``warehouse.formatkit.ingestor.Ingestor`` subclass.
They are found the way any format is: by their entry points in the group
``warehouse.formats`` (pyproject.toml), never imported by the core. The modules here
(``fields``, ``spans``, ``tokenizers``) are helpers the packages share; no package
imports another.

Each name is the ``--format`` value, the entry point's name, the package name and the
fixtures folder name under ``tests/fixtures/``.
"""
