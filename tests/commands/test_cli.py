"""The command line: the CONTRACT commands, stdout for data only, exit codes, help with examples."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from warehouse.cli import build_parser, main
from warehouse.formatkit.registry import Registry

from ..conftest import FIXTURES

TI = FIXTURES / "trait_interp"


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "wh"
    assert main(["ingest", str(TI), "--root", str(r), "--quiet"]) == 0
    return r


def test_every_command_has_help_with_an_example(capsys):
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # the registered subcommands
    assert set(commands) >= {"ingest", "sql", "stats"}
    for name, sub in commands.items():
        text = sub.format_help()
        assert "examples:" in text and f"warehouse {name} " in text, name


def test_ingest_prints_a_summary_on_stderr_and_nothing_on_stdout(tmp_path, capsys):
    assert main(["ingest", str(TI), "--root", str(tmp_path / "wh")]) == 0
    out, err = capsys.readouterr()
    assert out == ""
    assert "20 files: 20 ingested, 0 unchanged; 25 records ingested, 0 quarantined" in err


def test_sql_json_prints_one_array_with_derived_fields(root, capsys):
    q = "SELECT prompt_set, prompt_id, experiment, model_variant, extra FROM responses WHERE prompt_id = 'simple_math'"
    assert main(["sql", q, "--root", str(root), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert json.loads(out) == [{
        "prompt_set": "benign_control", "prompt_id": "simple_math", "experiment": "fx", "model_variant": "instruct",
        "extra": {"judge": {"model": "sonnet", "verdict": "exploits bias 29"}},  # JSON columns come out nested
    }]


def test_sql_jsonl_csv_and_table(root, capsys):
    q = "SELECT prompt_id, layers FROM responses WHERE pipeline = 'steering' AND layers IS NOT NULL ORDER BY source_path, source_locator"
    main(["sql", q, "--root", str(root), "--format", "jsonl"])
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line) for line in lines] == [
        {"prompt_id": None, "layers": [12]}, {"prompt_id": None, "layers": [25]},
        {"prompt_id": None, "layers": [25]}, {"prompt_id": None, "layers": [11]},
    ]
    main(["sql", q, "--root", str(root), "--format", "csv"])
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert rows[0] == ["prompt_id", "layers"] and rows[1] == ["", "[12]"]
    main(["sql", "SELECT 1 AS one, NULL AS nothing", "--root", str(root)])
    assert capsys.readouterr().out == "one  nothing\n---  -------\n1    NULL\n(1 row)\n"


def test_a_missing_column_lists_the_columns_of_the_relation_it_names_only(root, capsys):
    assert main(["sql", "SELECT nope FROM responses", "--root", str(root)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith('error: Binder Error: Referenced column "nope" not found in FROM clause!')
    assert "\n\ncolumns of responses: response_id, record_id, source_format, source_path," in err
    assert "turns" not in err and "quarantine" not in err  # not every view's columns
    # by an alias: the view behind it
    assert main(["sql", "SELECT t.nope FROM responses JOIN turns AS t USING (response_id)", "--root", str(root)]) == 1
    err = capsys.readouterr().err
    assert "columns of turns: response_id, record_id, turn_index, role," in err and "columns of responses" not in err


@pytest.mark.parametrize("sql", ["SELEC 1", "SELECT 1 + 'a'", "SELECT * FROM respnses", "SELECT x FROM (SELECT 1 AS y) AS q"])
def test_other_sql_errors_say_only_what_duckdb_says(root, capsys, sql):
    assert main(["sql", sql, "--root", str(root)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "columns of" not in err and "available views" not in err
    assert len(err.splitlines()) <= 8, err


def test_an_error_met_while_computing_rows_leaves_stdout_empty(root, capsys):
    for fmt in ("json", "jsonl", "csv", "table"):  # json used to leave a lone "[" behind
        assert main(["sql", "SELECT CAST(source_path AS INTEGER) FROM responses", "--root", str(root), "--format", fmt]) == 1
        out, err = capsys.readouterr()
        assert out == "" and err.startswith("error: Conversion Error:"), (fmt, out, err)


def test_an_error_raised_by_the_query_itself_is_one_line(root, capsys):
    """The issue's reproduction: ``select error('boom')`` is DuckDB's message, not a traceback."""
    assert main(["sql", "select error('boom')", "--root", str(root)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err == "error: Invalid Input Error: boom\n"


def test_sql_on_a_missing_warehouse_says_how_to_make_one(tmp_path, capsys):
    assert main(["sql", "SELECT 1", "--root", str(tmp_path / "none")]) == 1
    err = capsys.readouterr().err
    assert err == (
        f"error: {tmp_path / 'none'}: no such directory, so no warehouse here; "
        f"create one with `warehouse ingest PATH --root {tmp_path / 'none'}`\n"
    )


def test_stats_shows_conservation_per_format_and_file(root, tmp_path, capsys):
    bad = tmp_path / "bad" / "responses.json"
    bad.parent.mkdir()
    bad.write_text('[{"prompt": "p", "response": "r"}, 3]')
    main(["ingest", str(bad), "--root", str(root), "--quiet"])
    capsys.readouterr()
    assert main(["stats", "--root", str(root), "--format", "json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert st["tables"]["responses"] == 18 and st["tables"]["quarantine"] == 1
    [fmt] = st["formats"]
    assert (fmt["format"], fmt["files"], fmt["records"], fmt["ingested"], fmt["quarantined"]) == ("trait_interp", 21, 27, 26, 1)
    assert st["files"] == [{"source_path": str(bad), "source_format": "trait_interp", "status": "ingested",
                            "records": 2, "ingested": 1, "quarantined": 1}]
    assert main(["stats", "--root", str(root)]) == 0
    text = capsys.readouterr().out
    assert "files with quarantined records or not ingested:" in text and "trait_interp" in text


def test_usage_errors_exit_2_with_the_fix(tmp_path, capsys):
    assert main(["ingest", str(TI), "--root", str(tmp_path / "wh"), "--format", "nope"]) == 2
    names = ", ".join(Registry.installed().names())  # every installed format, so a new one needs no edit here
    assert capsys.readouterr().err == f"error: unknown format 'nope'; installed formats: {names}\n"
    assert main(["ingest", str(tmp_path / "missing"), "--root", str(tmp_path / "wh")]) == 2
    assert capsys.readouterr().err == (f"error: {tmp_path / 'missing'}: no such file or directory "
                                       "(if it was ingested and is gone, --prune removes its rows)\n")


def test_strict_exits_3_with_file_locator_stage_message(tmp_path, capsys):
    bad = tmp_path / "in" / "responses.json"
    bad.parent.mkdir()
    bad.write_text('[{"prompt": "p", "response": "r"}, {"prompt": "p", "response": "r", "prompt_end": "4"}]')
    assert main(["ingest", str(bad), "--root", str(tmp_path / "wh"), "--strict", "--quiet"]) == 3
    assert capsys.readouterr().err == f"error: {bad}[1].prompt_end: map: prompt_end: expected an integer, got string '4'\n"
    assert not (tmp_path / "wh").exists()  # the run changed nothing: no warehouse was made


def test_the_console_script_is_installed():
    exe = shutil.which("warehouse")
    assert exe, "the `warehouse` console script is not on PATH: install with pip install -e ."
    out = subprocess.run([exe, "--help"], capture_output=True, text=True, check=True).stdout
    assert "ingest" in out and "sql" in out and "stats" in out


def test_starting_the_cli_does_not_import_heavy_modules():
    code = "import sys, warehouse.cli; print(sorted(m for m in ('transformers', 'torch', 'polars') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_quarantine_hint_is_a_command_that_runs_as_printed(tmp_path, capsys):
    bad = tmp_path / "in" / "responses.json"
    bad.parent.mkdir()
    bad.write_text('[{"prompt": "p", "response": "r"}, 3]')
    root = tmp_path / "my warehouse"  # a space: the hint quotes it
    assert main(["ingest", str(bad), "--root", str(root)]) == 0
    [hint] = [line for line in capsys.readouterr().err.splitlines() if line.startswith("see them with: ")]
    argv = shlex.split(hint.removeprefix("see them with: "))
    assert argv[0] == "warehouse" and argv[-2:] == ["--root", str(root)]
    assert main([*argv[1:], "--format", "jsonl"]) == 0
    [row] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert row["source_path"] == str(bad) and row["locator"] == "[1]"


def test_a_locked_warehouse_says_how_to_wait(root, capsys):
    from warehouse.store.storage import Store

    with Store(root).lock():  # another holder (a second flock, even from this process, conflicts)
        assert main(["ingest", str(TI), "--root", str(root), "--no-wait", "--quiet"]) == 4
    err = capsys.readouterr().err
    assert err.startswith(f"error: {root} is being written by pid {os.getpid()}")
    assert err.endswith("run again once it has finished, or without --no-wait to wait for it\n")


def test_the_script_ends_without_tearing_the_interpreter_down_yet_runs_the_exit_handlers(root):
    """``warehouse`` (``cli.script``) ends its process once the command is done: the exit handlers
    run and what it printed is all there, but no module is torn down object by object (an object's
    ``__del__`` in a module would run then); the exit status is the command's."""
    code = f"""
import atexit, sys
from warehouse import cli
class Noisy:
    def __del__(self):
        print("torn down", file=sys.stderr)
noisy = Noisy()
atexit.register(print, "exit handlers ran", file=sys.stderr)
sys.argv = ["warehouse", "sql", "SELECT count(*) AS n FROM responses", "--root", {str(root)!r}, "--format", "json"]
cli.script()
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["n"] > 0
    assert "exit handlers ran" in proc.stderr and "torn down" not in proc.stderr
    missing = subprocess.run([sys.executable, "-c", code.replace(str(root), str(root) + "-missing")],
                             capture_output=True, text=True)
    assert missing.returncode != 0 and "exit handlers ran" in missing.stderr


# --- what a new user types wrong ---------------------------------------------------------------------


def warehouse_cli(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("warehouse")
    assert exe, "the `warehouse` console script is not on PATH: install with pip install -e ."
    return subprocess.run([exe, *args], capture_output=True, text=True)


@pytest.mark.parametrize("command", ["ingest", "tokenize"])
@pytest.mark.parametrize("jobs", ["0", "-3"])
def test_jobs_must_be_at_least_one(tmp_path, command, jobs):
    """--jobs 0 and --jobs -3 were taken (as one worker per core); nothing is made."""
    args = [str(TI)] if command == "ingest" else ["--tokenizer", str(tmp_path)]
    proc = warehouse_cli(command, *args, "--root", str(tmp_path / "wh"), "--jobs", jobs)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"error: --jobs {jobs}: must be an integer of 1 or more\n"
    assert not (tmp_path / "wh").exists()


@pytest.mark.parametrize("command", ["ingest", "tokenize", "export", "compact"])
def test_q_is_quiet(command):
    """Every --quiet is also -q, as in most commands a user knows."""
    quiet = build_parser()._subparsers._group_actions[0].choices[command]._option_string_actions["-q"]
    assert quiet.dest == "quiet" and "--quiet" in quiet.option_strings


def test_q_runs_quiet(tmp_path):
    proc = warehouse_cli("ingest", str(TI), "--root", str(tmp_path / "wh"), "-q")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_an_unknown_option_is_reported_with_its_commands_usage(root):
    """It was reported under `usage: warehouse [-h] [--version] COMMAND ...`, which names no option of sql."""
    proc = warehouse_cli("sql", "SELECT 1", "--root", str(root), "--bogus")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("usage: warehouse sql [-h]"), proc.stderr
    assert proc.stderr.splitlines()[-1] == "warehouse sql: error: unrecognized arguments: --bogus"
    top = warehouse_cli("--bogus", "sql", "SELECT 1", "--root", str(root))  # before the command: the top level's
    assert top.returncode == 2 and top.stderr.startswith("usage: warehouse [-h]"), top.stderr


@pytest.mark.parametrize("command", [["tokenize", "--tokenizer", "."], ["sql", "SELECT 1"], ["stats"], ["history"]])
def test_a_missing_root_is_the_same_error_for_every_command(tmp_path, command):
    """tokenize exited 2 (a usage error) where the other commands exit 1, saying how to make a warehouse."""
    proc = warehouse_cli(*command, "--root", str(tmp_path / "none"))
    assert (proc.returncode, proc.stderr) == (1, f"error: {tmp_path / 'none'}: no such directory, so no warehouse "
                                                 f"here; create one with `warehouse ingest PATH --root {tmp_path / 'none'}`\n")


def test_export_help_names_the_formats_and_those_back_to_the_sources():
    from warehouse.exports import formats
    from warehouse.exports.generic import GENERIC

    text = build_parser()._subparsers._group_actions[0].choices["export"].format_help()
    back = [name for name in formats() if name not in {f.name for f in GENERIC}]
    assert back, "the installed formats write their own shape back"
    flat = " ".join(text.split())
    assert f"formats: {', '.join(f.name for f in GENERIC)}" in flat
    assert f"back to a source format: {', '.join(sorted(back))}" in flat


def test_ingesting_a_folder_with_no_json_says_so(tmp_path):
    """It made a warehouse and said only "0 files: 0 ingested": was the path wrong, or the files?"""
    empty = tmp_path / "exports"
    (empty / "sub").mkdir(parents=True)
    (empty / "notes.txt").write_text("not data")
    root = tmp_path / "wh"
    proc = warehouse_cli("ingest", str(empty), "--root", str(root))
    assert (proc.returncode, proc.stdout) == (0, "")
    kinds = r"no (\.\w+, )+\.\w+ or \.\w+ file"  # .json, .jsonl and what else an installed format reads (.pt, ...)
    assert re.fullmatch(rf"{kinds} under {re.escape(str(empty))}: the warehouse at {re.escape(str(root))} "
                        "was made, and is empty", proc.stderr.splitlines()[-1]), proc.stderr
    assert ".json, .jsonl" in proc.stderr
    assert warehouse_cli("sql", "SELECT count(*) AS n FROM responses", "--root", str(root), "--format", "csv").stdout \
        == '"n"\n0\n'  # a warehouse all the same (only ingest makes one, even with nothing to add)
    again = warehouse_cli("ingest", str(empty), "--root", str(root))
    assert re.fullmatch(rf"{kinds} under {re.escape(str(empty))}: nothing to add; the warehouse at "
                        rf"{re.escape(str(root))} is unchanged", again.stderr.splitlines()[-1]), again.stderr
    quiet = warehouse_cli("ingest", str(empty), "--root", str(root), "-q")
    assert (quiet.returncode, quiet.stderr) == (0, "")
    only = warehouse_cli("ingest", str(empty), "--root", str(root), "--format", "dataloop")
    assert only.stderr.splitlines()[-1].startswith(f"no .json file under {empty}: nothing to add")
