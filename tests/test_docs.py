"""Docs that are generated or promised stay true."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from warehouse.formatkit.declared import TABLES, render_markdown
from warehouse.formatkit.declared_views import format_views, view_files

from .conftest import REPO


def test_tables_doc_is_current():
    doc = (REPO / "docs" / "tables.md").read_text()
    assert doc == render_markdown(), "docs/tables.md is stale: run `python -m warehouse.docgen`"


def test_every_declared_table_has_a_view_file_and_every_view_file_one_view():
    views = {}
    for path in view_files():
        names = re.findall(r"CREATE OR REPLACE VIEW (\w+)", path.read_text())
        assert len(names) == 1, f"{path.name}: one view per file"
        views[names[0]] = path.name
    for statement in format_views():  # a format's own views: one statement each
        names = re.findall(r"CREATE OR REPLACE VIEW (\w+)", statement)
        assert len(names) == 1, statement
        views[names[0]] = statement
    assert set(TABLES) <= set(views)


def test_readme_gives_the_two_commands_and_ci_runs_the_test_one():
    readme = (REPO / "README.md").read_text()
    commands = re.findall(r"```sh\n(.*?)\n```", readme, re.S)
    main_cmd = next(c for c in commands if "warehouse ingest samples" in c)
    test_cmd = next(c for c in commands if "pytest" in c)
    assert "pip install" in main_cmd and "pip install" in test_cmd
    ci = (REPO / ".ci" / "run").read_text()
    assert test_cmd.strip() in ci, ".ci/run must run exactly README's test command"
    assert ci.rstrip().endswith(test_cmd.strip()), ".ci/run ends with README's test command"
    assert "\nruff check .\n" in ci, ".ci/run lints before the tests ([tool.ruff] in pyproject.toml)"


def test_sample_data_is_what_build_writes(tmp_path):
    """samples/ is generated; a hand edit would be lost at the next build."""
    subprocess.run([sys.executable, str(REPO / "samples" / "build.py"), str(tmp_path)], check=True, capture_output=True)

    def data(root):
        return {p.relative_to(root): p.read_bytes() for p in root.rglob("*")
                if p.is_file() and p.suffix != ".py" and "__pycache__" not in p.parts}

    committed, built = data(REPO / "samples"), data(tmp_path)
    assert built == committed, "samples/ differs from what samples/build.py writes: run it and commit"


#: documents of other projects that the code cites by their path there
OTHER_PROJECTS_DOCS = {"docs/response_schema.md"}  # trait-interp's response schema


def test_the_docs_and_modules_the_code_cites_exist():
    """A docstring or comment that sends the reader to a doc (``docs/x.md``) or a module
    (``warehouse.exports.generic``) sends them somewhere that exists."""
    missing = []
    for folder in ("warehouse", "ingest"):
        for path in sorted((REPO / folder).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            for doc in set(re.findall(r"(?<![\w/])docs/[\w/.-]+\.md", text)) - OTHER_PROJECTS_DOCS:
                if not (REPO / doc).exists():
                    missing.append(f"{path.relative_to(REPO)}: {doc}")
            for ref in set(re.findall(r"(?<![\w.])warehouse(?:\.\w+)+", text)):
                if not _resolves(ref):
                    missing.append(f"{path.relative_to(REPO)}: {ref}")
    assert not missing, "cited but missing:\n" + "\n".join(missing)


# --- the docs cite what exists, and describe the command line the parser builds -----------------------

#: what the docs name that is not in the repository, and why that is right
NOT_IN_THE_REPOSITORY = {
    "notebooks/out/": "written by running the notebooks",
    "notebooks/out/wh": "written by running the notebooks",
    "warehouse._sql": "the sql/ folder's name inside a wheel (pyproject.toml); a checkout reads sql/ itself",
    "docs/EXPORT_DATA_SHAPE.md": "AfterImage's documentation, in its own repository",
} | dict.fromkeys(OTHER_PROJECTS_DOCS, "another project's documentation") | dict.fromkeys(
    ("samples/*.json", "samples/3_epoch_1.json", "samples/4_epoch_2.json"),
    "members of an Inspect .eval archive (docs/formats/inspect.md), not this repository's samples/")
DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")), REPO / "bench" / "README.md"]
TOP_FOLDERS = "warehouse|ingest|tests|docs|bench|notebooks|sql|samples"


def _resolves(ref: str) -> bool:
    """``warehouse.x.y``: the longest importable module, then attributes."""
    import importlib

    parts = ref.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
            break
        except ImportError:
            continue
    try:
        for name in parts[i:]:
            obj = getattr(obj, name)
    except AttributeError:
        return False
    return True


def test_the_files_tests_and_names_the_docs_cite_exist():
    """A path (`warehouse/cli.py`, `tests/test_x.py::test_y`), a link or a dotted name
    (`warehouse.run.runner.commit_run`) in README.md or docs/ names something that exists."""
    missing = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        cited = []
        for code in re.findall(r"`([^`\n]+)`", text):
            cited += [("name", ref) for ref in re.findall(r"(?<![\w./])warehouse(?:\.\w+)+", code)]
            path = re.fullmatch(rf"((?:{TOP_FOLDERS})/[\w./*-]*)(?:::(\w+))?", code.strip())
            if path:
                cited.append(("path", path.group(0)))
        cited += [("link", link) for link in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
                  if not link.startswith(("http://", "https://"))]
        for kind, ref in cited:
            if ref in NOT_IN_THE_REPOSITORY or ref.split("::")[0] in NOT_IN_THE_REPOSITORY:
                continue
            if kind == "name":
                ok = _resolves(ref)
            elif kind == "link":
                ok = (doc.parent / ref).exists()
            else:
                file, _, test = ref.partition("::")
                found = list(REPO.glob(file)) if "*" in file else [REPO / file] if (REPO / file).exists() else []
                ok = bool(found) and (not test or f"def {test}(" in found[0].read_text(encoding="utf-8"))
            if not ok:
                missing.append(f"{doc.relative_to(REPO)}: {ref}")
    assert not missing, "cited but missing:\n" + "\n".join(missing)


def _commands_of(text: str) -> list[list[str]]:
    """The `warehouse ...` command lines of the ```sh blocks, as words (quotes may span lines; a pipe,
    a redirection or a comment ends the command)."""
    import shlex

    commands = []
    for block in re.findall(r"```sh\n(.*?)\n```", text, re.S):
        pending = ""
        for line in block.splitlines():
            pending = f"{pending}\n{line}" if pending else line
            lexer = shlex.shlex(pending, posix=True, punctuation_chars="|&;<>")
            lexer.whitespace_split, lexer.commenters = True, "#"
            try:
                words = list(lexer)
            except ValueError:  # an open quote: the command goes on on the next line
                continue
            pending = ""
            if "warehouse" in words:  # `echo ... | warehouse sql -` too
                words = words[words.index("warehouse"):]
                cut = next((i for i, w in enumerate(words) if set(w) <= set("|&;<>")), len(words))
                commands.append(words[:cut])
    return commands


def _subcommands():
    import argparse

    from warehouse.cli import build_parser

    parser = build_parser(format_names=False)
    return parser, next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def test_every_command_is_in_the_readme_with_an_example_that_runs_through_the_parser():
    """sqlite-utils' documented-commands test: a command the parser has and README does not show is drift."""
    parser, commands = _subcommands()
    examples = {}
    for words in _commands_of((REPO / "README.md").read_text(encoding="utf-8")):
        if len(words) > 1 and words[1] in commands:
            try:
                parser.parse_args(words[1:])
            except SystemExit:  # a synopsis line (`--root DIR [--format NAME]`), not an example
                continue
            examples.setdefault(words[1], words)
    assert sorted(examples) == sorted(commands), f"commands without a README example: {sorted(set(commands) - set(examples))}"


@pytest.mark.parametrize("doc, complete", [("README.md", False), ("docs/cli.md", True)])
def test_the_synopsis_lists_the_parsers_commands_and_options(doc, complete):
    """The first ```sh block of README's "Using it" and of docs/cli.md: one line per command the parser
    has, naming only options the command has (docs/cli.md, the reference, every one of them)."""
    _, commands = _subcommands()
    text = (REPO / doc).read_text(encoding="utf-8")
    if doc == "README.md":
        text = text[text.index("## Using it"):]
    block = re.search(r"```sh\n(.*?)\n```", text, re.S).group(1)
    lines = [line for line in block.splitlines() if re.match(r"warehouse [a-z]", line)]
    named: dict[str, set[str]] = {}
    for line in lines:
        named.setdefault(line.split()[1], set()).update(re.findall(r"(?<![\w-])-{1,2}[a-z][\w-]*", line.split("#")[0]))
    assert sorted(named) == sorted(commands)
    for command, options in named.items():
        has = {o for o in commands[command]._option_string_actions if o not in ("-h", "--help")}
        assert options <= has, f"{doc}: warehouse {command} has no {sorted(options - has)}"
        if complete:  # an option is named by any of its spellings (-f, --file)
            missing = [max(a.option_strings, key=len) for a in commands[command]._actions
                       if a.option_strings and a.dest != "help" and not options & set(a.option_strings)]
            assert not missing, f"{doc}: warehouse {command} leaves out {missing}"


def test_the_exit_code_table_is_the_one_errors_defines():
    """Exit codes are defined once (warehouse/errors.py: ``EXIT_*``, each error's ``exit_code`` one of them);
    docs/cli.md's table lists exactly those."""
    from warehouse import errors

    defined = {name: value for name, value in vars(errors).items() if name.startswith("EXIT_")}
    doc = (REPO / "docs" / "cli.md").read_text().split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    assert sorted(int(c) for c in re.findall(r"^\| (\d+) \|", doc, re.M)) == sorted(defined.values())
    raised = [c for c in vars(errors).values() if isinstance(c, type) and hasattr(c, "exit_code")]
    assert {c.exit_code for c in raised} | {errors.EXIT_OK} == set(defined.values()), raised
