"""The commands of the ``warehouse`` command line (``warehouse/cli.py``), a module per group:
each adds its commands' arguments and help (``add_<command>``) and holds their handlers
(``cmd_<command>``), each a thin wrapper over the public function of its name.

Imported by ``cli.build_parser`` inside ``main``, not at start-up: a Ctrl-C while they load is caught there.
"""
