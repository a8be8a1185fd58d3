"""The command line and the Python API are one thing (sqlite-utils' model).

``warehouse X --some-option V`` calls ``warehouse.X(..., some_option=V)``: every option fills
the parameter of its name, and the function, not the command line, checks the values.
"""

from __future__ import annotations

import argparse
import inspect
import os

import pytest

import warehouse
from warehouse.cli import build_parser, main
from warehouse.errors import UsageError

from ..conftest import FIXTURES

#: options that are the command line's own, and why Python needs no parameter for them
CLI_ONLY = {
    "--quiet": "no progress bar (progress=False) and no summary on stderr: the function returns the summary",
    "--file": "sql -f FILE: the command line reads the query from a file or stdin; Python passes its text",
}


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser(format_names=False)
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def parameter(action: argparse.Action) -> str:
    """The parameter an option fills, by its name: ``--max-record-mb`` -> max_record_mb, ``--no-wait`` -> wait."""
    if not action.option_strings:
        return action.dest
    name = max(action.option_strings, key=len).removeprefix("--")
    if isinstance(action, argparse._StoreFalseAction) or _forgets(action):
        name = name.removeprefix("no-")
    if isinstance(action, argparse._AppendAction):  # repeated: --storage-option K=V ... -> storage_options
        name += "s"
    return name.replace("-", "_")


#: ``--format`` names three things; each is its own keyword (``warehouse.moved.renamed_keyword``)
FORMAT_KEYWORD = {"ingest": "source_format", "sql": "output_format", "stats": "output_format",
                  "history": "output_format", "export": "export_format"}


def _forgets(action: argparse.Action) -> bool:
    """``--no-tokenizer``: the value False for the parameter ``--tokenizer`` fills (forget the remembered one)."""
    return type(action) is argparse._StoreConstAction and action.const is False  # (store_false is a subclass)


def given(action: argparse.Action) -> tuple[list[str], object]:
    """Command-line words that give the option a value other than its default, and that value."""
    if isinstance(action, argparse._StoreTrueAction):
        return [max(action.option_strings, key=len)], True
    if isinstance(action, argparse._StoreFalseAction) or _forgets(action):
        return [max(action.option_strings, key=len)], False
    if action.choices:
        value = next(c for c in reversed(list(action.choices)) if c != action.default)
    elif action.type is int:
        value = 7
    elif action.type is float:
        value = 2.5
    else:
        value = f"value-of-{action.dest}"
    if not action.option_strings:
        return ([value, value + "-2"], [value, value + "-2"]) if action.nargs == "+" else ([value], value)
    if isinstance(action, argparse._AppendAction):
        return [max(action.option_strings, key=len), str(value)], [value]
    return [max(action.option_strings, key=len), str(value)], value


@pytest.mark.parametrize("command", sorted(subcommands()))
def test_every_option_fills_the_parameter_of_its_name(command, monkeypatch):
    """Each command calls ``warehouse.<command>``; every option's value arrives, unchanged and unchecked,
    in the parameter named like the option (checking is the function's job)."""
    function = getattr(warehouse, command)
    signature = inspect.signature(function)
    calls = []

    class Summary:
        def text(self) -> str:
            return ""

    def recorded(*args, **kwargs):
        calls.append(signature.bind(*args, **kwargs).arguments)  # a name the function lacks raises here
        return Summary()

    monkeypatch.setattr(warehouse, command, recorded)
    argv, expected, unmapped, forgetting = [command], {}, [], []
    for action in subcommands()[command]._actions:
        if isinstance(action, argparse._HelpAction) or max(action.option_strings, key=len, default="") in CLI_ONLY:
            continue
        if _forgets(action):  # excludes the option it forgets: given on its own below
            forgetting.append(action)
            continue
        words, value = given(action)
        argv += words
        name = parameter(action)
        name = FORMAT_KEYWORD[command] if name == "format" else name
        if name not in signature.parameters:
            unmapped.append(f"{max(action.option_strings, key=len, default=action.dest)} -> {name}")
        expected[name] = value
    assert not unmapped, f"options of `warehouse {command}` without a parameter of warehouse.{command}: {unmapped}"
    assert main(argv) == 0
    [arguments] = calls
    assert {name: arguments.get(name) for name in expected} == expected
    if "--quiet" in subcommands()[command]._option_string_actions:
        assert main([*argv, "--quiet"]) == 0 and calls[-1]["progress"] is False
    for action in forgetting:
        flag, name = max(action.option_strings, key=len), parameter(action)
        assert name in signature.parameters, f"{flag} of `warehouse {command}` fills no parameter {name}"
        valued = "--" + name.replace("_", "-")
        at = argv.index(valued)
        assert main([*argv[:at], *argv[at + 2:], flag]) == 0 and calls[-1][name] is False


def test_the_command_lines_own_options_exist():
    """The list of exceptions above names real options only: it cannot hide a stale one."""
    options = {o for sub in subcommands().values() for o in sub._option_string_actions}
    assert set(CLI_ONLY) <= options


def test_scan_read_and_read_arrow_take_the_same_arguments_as_function_and_method():
    verbs = ("scan", "read", "read_arrow")
    shapes = set()
    for verb in verbs:
        function = list(inspect.signature(getattr(warehouse, verb)).parameters)
        method = list(inspect.signature(getattr(warehouse.Warehouse, verb)).parameters)
        assert function[0] == "root" and method[0] == "self" and function[1:] == method[1:], verb
        shapes.add(tuple(method[1:]))
    assert shapes == {("name", "where", "columns")}


# --- the checks live in the API: Python callers get them too ---------------------------------------

TI = FIXTURES / "trait_interp"


@pytest.mark.parametrize("call, message", [
    (lambda t: warehouse.ingest(TI, t / "wh", max_record_mb=0), "--max-record-mb 0: must be a positive number of MB"),
    (lambda t: warehouse.ingest(TI, t / "wh", tokenizer=t / "none"), "not a directory (give a local tokenizer directory"),
    (lambda t: warehouse.tokenize(t / "wh", TI / "datasets" / "inference" / "benign_control.json"), "not a directory"),
    (lambda t: warehouse.ingest(TI, "gs://bucket/wh"), "--root gs://bucket/wh: a warehouse root may be a local directory or an s3:// URL"),
    (lambda t: warehouse.tokenize("gs://bucket/wh", t), "--root gs://bucket/wh: a warehouse root may be"),
    (lambda t: warehouse.sql("gs://bucket/wh", "SELECT 1"), "--root gs://bucket/wh: a warehouse root may be"),
    (lambda t: warehouse.stats("https://example.org/wh"), "--root https://example.org/wh: a warehouse root may be"),
    (lambda t: warehouse.export("az://bucket/wh", None, "jsonl", t / "o.jsonl"), "--root az://bucket/wh: a warehouse root may be"),
    (lambda t: warehouse.export(t, None, "jsonl", "s3://bucket/o.jsonl"), "--out s3://bucket/o.jsonl: a URL; --out is a local path"),
    (lambda t: warehouse.history("gs://bucket/wh"), "--root gs://bucket/wh: a warehouse root may be"),
    (lambda t: warehouse.compact("gs://bucket/wh"), "--root gs://bucket/wh: a warehouse root may be"),
    (lambda t: warehouse.sql("s3://bucket/wh", "SELECT 1", storage_options=["region"]), "--storage-option 'region': expected KEY=VALUE"),
    (lambda t: warehouse.history("s3://bucket/wh", storage_options={"colour": "x"}), "--storage-option colour: unknown option"),
    (lambda t: warehouse.export(t / "wh", None, "jsonl", t / "o.jsonl", memory_limit="lots"),
     "--memory-limit 'lots': not a memory size (give e.g. 1GB, 512MB)"),
    (lambda t: warehouse.sql(t, "SELECT 1", output_format="xml"), "--format 'xml': choose one of table, csv, json, jsonl"),
    (lambda t: warehouse.sql(t, "SELECT 1", max_rows=-1), "--max-rows -1: must be an integer of 0 or more (0: all)"),
    (lambda t: warehouse.stats(t, output_format="csv"), "--format 'csv': choose one of table, json"),
    (lambda t: warehouse.ingest(TI, t / "wh", jobs=0), "--jobs 0: must be an integer of 1 or more"),
    (lambda t: warehouse.tokenize(t / "wh", TI, jobs=-3), "--jobs -3: must be an integer of 1 or more"),
    (lambda t: warehouse.open(t, as_of=True), "--as-of True: must be a snapshot number, an integer of 1 or more"),
    (lambda t: warehouse.connect(t, as_of=1.0), "--as-of 1.0: must be a snapshot number"),
    (lambda t: warehouse.sql(t, "SELECT 1", as_of="one"), "--as-of 'one': must be a snapshot number"),
    (lambda t: warehouse.export(t, None, "jsonl", t / "o.jsonl", as_of=0), "--as-of 0: must be a snapshot number"),
    (lambda t: spark_register(t, as_of="-2"), "--as-of '-2': must be a snapshot number"),
], ids=["max_record_mb", "tokenizer", "tokenize tokenizer", "ingest url", "tokenize url", "sql url", "stats url",
        "export url", "export out url", "history url", "compact url", "sql storage option", "history storage option",
        "memory_limit", "sql format", "sql max_rows", "stats format", "ingest jobs", "tokenize jobs", "open as_of", "connect as_of", "sql as_of",
        "export as_of", "spark register as_of"])
def test_python_callers_get_the_checks_the_command_line_gets(tmp_path, monkeypatch, call, message):
    monkeypatch.chdir(tmp_path)  # a URL taken for a relative path would make ./s3:/... here
    with pytest.raises(UsageError) as e:
        call(tmp_path)
    assert message in str(e.value)
    assert os.listdir(tmp_path) == []  # refused before anything was made


def spark_register(root, **kwargs):
    """``warehouse.spark.register`` (the spark extra): its arguments are checked before the session is used."""
    pytest.importorskip("pyspark", reason="the spark extra is not installed")
    from warehouse.spark import register

    return register(None, root, **kwargs)


def test_as_of_is_a_snapshot_number_or_its_digits(samples_wh, capsys):
    """as_of=True or 1.0 looked for the file True.json / 1.0.json (FileNotFoundError); "1" was no snapshot 1."""
    for bad in (True, 1.0):
        with pytest.raises(UsageError, match=rf"--as-of {bad!r}: must be a snapshot number"):
            warehouse.open(samples_wh.root, as_of=bad)
    assert warehouse.open(samples_wh.root, as_of="1").snapshot.number == 1
    assert warehouse.sql(samples_wh.root, "SELECT count(*) FROM turns", as_of="1").fetchall() == \
        warehouse.connect(samples_wh.root, as_of=1).sql("SELECT count(*) FROM turns").fetchall()
    assert main(["sql", "SELECT 1", "--root", str(samples_wh.root), "--as-of", "0"]) == 2
    assert capsys.readouterr().err == "error: --as-of 0: must be a snapshot number, an integer of 1 or more " \
                                      "(`warehouse history` lists them)\n"


def test_warehouse_arrow_is_read_arrow_under_its_old_name(samples_wh):
    wh = warehouse.open(samples_wh.root)
    with pytest.warns(DeprecationWarning, match="Warehouse.arrow is now Warehouse.read_arrow"):
        old = wh.arrow("turns", where="role = 'user'", columns=["content"])
    assert old.equals(wh.read_arrow("turns", where="role = 'user'", columns=["content"]))


def test_sql_and_stats_are_functions(samples_wh, capsys):
    relation = warehouse.sql(samples_wh.root, "SELECT count(*) AS n FROM turns WHERE role = ?", ["user"])
    assert relation.fetchall() == [(samples_wh.one("SELECT count(*) FROM turns WHERE role = 'user'"),)]
    assert warehouse.sql(samples_wh.root, "SELECT 1 AS one", output_format="csv") is None
    assert capsys.readouterr().out == '"one"\n1\n'
    st = warehouse.stats(samples_wh.root)
    assert st["tables"]["responses"] == samples_wh.one("SELECT count(*) FROM responses") and st["files"] == []
    every = warehouse.stats(samples_wh.root, files=True)["files"]
    assert len(every) == samples_wh.one("SELECT count(*) FROM sources")
    assert main(["stats", "--root", str(samples_wh.root), "--format", "json"]) == 0
    cli = capsys.readouterr().out
    assert warehouse.stats(samples_wh.root, output_format="json") is None and capsys.readouterr().out == cli
