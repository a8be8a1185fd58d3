"""`warehouse sql` output: every DuckDB type valid in every format, read back with strict parsers;
the table format bounded, the data formats complete."""

from __future__ import annotations

import csv
import decimal
import io
import json
import os
import shutil
import subprocess

import duckdb
import pytest
from wcwidth import wcswidth

import warehouse
from warehouse.cli import main

from ..conftest import read_terminal, terminal

#: one value per DuckDB type, at its edges (extremes, NaN, infinities, NULLs inside nested values)
SAMPLES = {
    "BOOLEAN": "true",
    "TINYINT": "(-128)::TINYINT", "UTINYINT": "255::UTINYINT", "SMALLINT": "(-32768)::SMALLINT",
    "USMALLINT": "65535::USMALLINT", "INTEGER": "(-2147483648)::INTEGER", "UINTEGER": "4294967295::UINTEGER",
    "BIGINT": "(-9223372036854775808)::BIGINT", "UBIGINT": "18446744073709551615::UBIGINT",
    "HUGEINT": "170141183460469231731687303715884105727::HUGEINT",
    "UHUGEINT": "340282366920938463463374607431768211455::UHUGEINT",
    "FLOAT": "'NaN'::FLOAT", "DOUBLE": "'-Infinity'::DOUBLE",
    "DECIMAL": "1234567890123456789012345678.0123456789::DECIMAL(38,10)",
    "VARCHAR": "'a \"quoted\", line' || chr(10) || 'two' || chr(9) || 'tab ' || chr(1) || ' é'",
    "BLOB": "'\\xAA\\x00b'::BLOB", "BIT": "'0101'::BIT",
    "BIGNUM": "123456789012345678901234567890123456789012::BIGNUM",
    "DATE": "'infinity'::DATE", "TIME": "'23:59:59.999999'::TIME", "TIME_NS": "'12:00:00.123456789'::TIME_NS",
    "TIME WITH TIME ZONE": "'12:00:00+05:30'::TIMETZ",
    "TIMESTAMP": "'2024-02-29 12:00:00.123456'::TIMESTAMP", "TIMESTAMP_S": "'2024-02-29 12:00:00'::TIMESTAMP_S",
    "TIMESTAMP_MS": "'2024-02-29 12:00:00.123'::TIMESTAMP_MS", "TIMESTAMP_NS": "'2024-02-29 12:00:00.123456789'::TIMESTAMP_NS",
    "TIMESTAMP WITH TIME ZONE": "'-infinity'::TIMESTAMPTZ",
    "TIMESTAMPTZ_NS": "'2024-02-29 12:00:00.123456789+00'::TIMESTAMPTZ_NS",
    "INTERVAL": "INTERVAL '1 month 2 days 3 microseconds'",
    "UUID": "'c2a0e5b4-8b4e-4f7e-9a2b-7c1d5f3e9a10'::UUID", "ENUM": "'b'::ENUM('a', 'b')",
    "LIST": "[1.0, 'NaN'::DOUBLE, NULL]", "ARRAY": "[[1, 2], [3, NULL]]::INTEGER[2][2]",
    "STRUCT": "{'k': '\\xFF'::BLOB, 'v': [INTERVAL 1 day], 'x': 'Infinity'::FLOAT}",
    "MAP": "MAP {1: 'x', 2: NULL}",
    "UNION": "union_value(d := 'Infinity'::DOUBLE)::UNION(d DOUBLE, s VARCHAR)",
    "JSON": "'{\"a\": [1, {\"b\": null}], \"n\": NaN}'::JSON",  # DuckDB's JSON type accepts NaN: JSON does not
    "VARIANT": "{'a': [1, 2]}::VARIANT", "GEOMETRY": "'POINT (1 2)'::GEOMETRY", "NULL": "NULL",
}
#: logical types that hold no values of their own
NOT_VALUES = {"TYPE", "TUPLE"}

#: what the issue saw go wrong, and the text each must be instead
EXPECTED_TEXT = {
    "HUGEINT": "170141183460469231731687303715884105727",  # csv made it a float
    "UHUGEINT": "340282366920938463463374607431768211455",
    "DECIMAL": "1234567890123456789012345678.0123456789",
    "BLOB": "\\xAA\\x00b",  # csv printed b'...'
    "INTERVAL": "1 month 2 days 00:00:00.000003",  # json crashed on MonthDayNano
    "DATE": "infinity",
    "TIME WITH TIME ZONE": "12:00:00+05:30",
    "UUID": "c2a0e5b4-8b4e-4f7e-9a2b-7c1d5f3e9a10",
}

QUERY = "SELECT " + ", ".join(f'{expr} AS "{name}"' for name, expr in SAMPLES.items()) + " FROM range(3)"


def no_constants(token: str):
    raise ValueError(f"{token} is not JSON")


def strict_json(text: str):
    return json.loads(text, parse_constant=no_constants, parse_float=decimal.Decimal)  # exact decimals


def run(root, capsys, *args) -> str:
    assert main(["sql", *args, "--root", str(root)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return out


def test_the_samples_cover_every_duckdb_type():
    types = {r[0] for r in duckdb.connect().sql("SELECT DISTINCT logical_type FROM duckdb_types()").fetchall()}
    assert types - NOT_VALUES <= set(SAMPLES), f"add a sample for {sorted(types - NOT_VALUES - set(SAMPLES))}"


def test_json_and_jsonl_are_strict_json_with_exact_values(samples_wh, capsys):
    rows = strict_json(run(samples_wh.root, capsys, QUERY, "--format", "json"))
    lines = [strict_json(line) for line in run(samples_wh.root, capsys, QUERY, "--format", "jsonl").splitlines()]
    assert rows == lines and len(rows) == 3
    row = rows[0]
    assert list(row) == list(SAMPLES)
    assert row["HUGEINT"] == 2**127 - 1 and row["UHUGEINT"] == 2**128 - 1 and row["UBIGINT"] == 2**64 - 1
    assert row["BIGNUM"] == 123456789012345678901234567890123456789012
    assert row["DECIMAL"] == decimal.Decimal("1234567890123456789012345678.0123456789")  # an exact number
    for name, text in EXPECTED_TEXT.items():
        if name not in ("HUGEINT", "UHUGEINT", "DECIMAL"):
            assert row[name] == text, name
    assert row["FLOAT"] is None and row["DOUBLE"] is None  # NaN, -Infinity: JSON has no words for them
    assert row["VARCHAR"] == 'a "quoted", line\ntwo\ttab \x01 é'
    assert row["LIST"] == [1.0, None, None] and row["ARRAY"] == [[1, 2], [3, None]]
    assert row["STRUCT"] == {"k": "\\xFF", "v": ["1 day"], "x": None}
    assert row["MAP"] == {"1": "x", "2": None}
    assert row["JSON"] == {"a": [1, {"b": None}], "n": None}  # nested JSON, not a string holding JSON
    assert row["VARIANT"] == {"a": [1, 2]}
    assert row["NULL"] is None


def test_csv_is_strict_csv_with_duckdbs_text_and_nested_values_as_json(samples_wh, capsys):
    out = run(samples_wh.root, capsys, QUERY, "--format", "csv")
    rows = list(csv.reader(io.StringIO(out, newline=""), strict=True))
    assert rows[0] == list(SAMPLES) and len(rows) == 4
    row = dict(zip(rows[0], rows[1]))
    for name, text in EXPECTED_TEXT.items():
        assert row[name] == text, name
    assert row["VARCHAR"] == 'a "quoted", line\ntwo\ttab \x01 é'
    assert (row["FLOAT"], row["DOUBLE"]) == ("nan", "-inf")
    for name in ("LIST", "ARRAY", "STRUCT", "MAP", "UNION", "JSON", "VARIANT"):
        strict_json(row[name])
    assert strict_json(row["STRUCT"]) == {"k": "\\xFF", "v": ["1 day"], "x": None}
    assert row["NULL"] == ""
    assert not any(cell.startswith(("b'", "Decimal(", "datetime.", "MonthDayNano")) for cell in rows[1])


def test_csv_tells_null_from_an_empty_string(samples_wh, capsys):
    out = run(samples_wh.root, capsys, "SELECT NULL::VARCHAR AS n, '' AS e", "--format", "csv")
    assert out.splitlines()[1] == ',""'
    assert run(samples_wh.root, capsys, "SELECT 1 AS a WHERE false", "--format", "csv") == '"a"\n'


def test_the_table_shows_every_type_as_text(samples_wh, capsys):
    out = run(samples_wh.root, capsys, QUERY, "--max-width", "0")
    lines = out.splitlines()
    assert lines[-1] == "(3 rows)" and len(lines) == 6
    for text in EXPECTED_TEXT.values():
        assert text in lines[2]
    assert "MonthDayNano" not in out and "b'" not in out and "Decimal(" not in out


def test_repeated_and_odd_column_names_are_kept(samples_wh, capsys):
    q = 'SELECT 1 AS a, 2 AS a, 3 AS "we ird ""x"""'
    assert list(csv.reader(io.StringIO(run(samples_wh.root, capsys, q, "--format", "csv"))))[0] == ["a", "a", 'we ird "x"']
    assert run(samples_wh.root, capsys, q).splitlines()[0].split("  ") == ["a", "a", 'we ird "x"']
    assert strict_json(run(samples_wh.root, capsys, q, "--format", "json")) == [{"a": 1, "a_1": 2, 'we ird "x"': 3}]


#: names a query may give its columns that the output's own SQL must not take for names of its own
#: (DuckDB gives no column an empty name: an Arrow column "" becomes v0, a PIVOT on '' makes a column '')
HOSTILE_NAMES = ["x", "r", "t", "c0", "to_json", 'weird "name', " ", "a", "a", "a_1"]
#: the JSON keys of those columns: repeated names suffixed as DuckDB does
HOSTILE_KEYS = ["x", "r", "t", "c0", "to_json", 'weird "name', " ", "a", "a_1", "a_1_1", "''"]


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
@pytest.mark.parametrize("nulls", [False, True], ids=["values", "nulls"])
def test_json_keeps_every_column_whatever_its_name(samples_wh, capsys, fmt, nulls):
    """The issue's case: ``SELECT 1 AS x, 2 AS r`` printed ``[2]`` alone, and with a NULL there a traceback."""
    values = [None if nulls and i % 2 else i for i in range(len(HOSTILE_NAMES))]
    columns = ", ".join(f'{"NULL" if v is None else v} AS "{n.replace(chr(34), chr(34) * 2)}"'
                        for v, n in zip(values, HOSTILE_NAMES))
    query = f"SELECT * FROM (SELECT {columns}), (PIVOT (SELECT '' AS k, 99 AS v) ON k USING first(v))"
    for q, expected in (("SELECT 1 AS x, 2 AS r", {"x": 1, "r": 2}), ("SELECT 1 AS x, NULL AS r", {"x": 1, "r": None}),
                        (query, dict(zip(HOSTILE_KEYS, values + [99])))):
        out = run(samples_wh.root, capsys, q, "--format", fmt)
        rows = strict_json(out) if fmt == "json" else [strict_json(line) for line in out.splitlines()]
        assert rows == [expected]
        assert list(rows[0]) == list(expected)  # in the query's order
    buf = io.StringIO()
    assert warehouse.sql(samples_wh.root, query, output_format=fmt, out=buf) is None
    assert buf.getvalue() == run(samples_wh.root, capsys, query, "--format", fmt)


def test_the_table_shows_a_bounded_number_of_rows_and_says_how_many_there_are(samples_wh, capsys):
    out = run(samples_wh.root, capsys, "SELECT range AS n, repeat('x', 1000) AS long FROM range(100000)")
    lines = out.splitlines()
    assert lines[-1] == "(100000 rows, 40 shown; use --format csv|json|jsonl for all, or --max-rows N)"
    assert len(lines) == 2 + 40 + 1
    assert lines[2].split()[0] == "0" and lines[41].split()[0] == "39"
    assert max(len(line) for line in lines[2:-1]) < 80  # cells cut to fit
    out = run(samples_wh.root, capsys, "SELECT range AS n FROM range(5)", "--max-rows", "2")
    assert out.splitlines()[-1] == "(5 rows, 2 shown; use --format csv|json|jsonl for all, or --max-rows N)"
    assert run(samples_wh.root, capsys, "SELECT range AS n FROM range(50)", "--max-rows", "0").splitlines()[-1] == "(50 rows)"


def test_the_data_formats_print_every_row(samples_wh, capsys):
    q = "SELECT range AS n FROM range(20000)"  # more than one Arrow batch
    assert [strict_json(x)["n"] for x in run(samples_wh.root, capsys, q, "--format", "jsonl").splitlines()] == list(range(20000))
    assert [r["n"] for r in strict_json(run(samples_wh.root, capsys, q, "--format", "json"))] == list(range(20000))
    assert [int(r[0]) for r in list(csv.reader(io.StringIO(run(samples_wh.root, capsys, q, "--format", "csv"))))[1:]] == list(range(20000))


@pytest.mark.parametrize("fmt,want", [("table", "n\n--\n20\n(1 row)\n"), ("json", '[\n{"n":20}\n]\n'),
                                      ("jsonl", '{"n":20}\n'), ("csv", '"n"\n20\n')])
def test_a_query_ending_in_semicolons_and_comments_prints_in_every_format(samples_wh, capsys, fmt, want):
    """As a query read from a file often ends (-f report.sql): each format's rows are made by a statement
    around the query, which the query's end must not end early (it did: a parser error's traceback)."""
    q = "/* count */ SELECT count(*) AS n -- how many\nFROM range(20);  -- done\n;\n/* end */\n"
    assert run(samples_wh.root, capsys, q, "--format", fmt) == want


@pytest.mark.parametrize("fmt", ["table", "csv", "json", "jsonl"])
def test_a_query_with_parameters_prints_in_every_format(samples_wh, fmt):
    """The rows are made by a statement around the query's own, run with the query's parameter values."""
    def printed(query, params):
        out = io.StringIO()
        warehouse.sql(samples_wh.root, query, params, output_format=fmt, out=out)
        return out.getvalue()

    want = printed("SELECT 3 AS n, 'x''y' AS s", None)
    assert printed("SELECT ? AS n, ? AS s", [3, "x'y"]) == want
    assert printed("SELECT $n AS n, $s AS s -- named", {"n": 3, "s": "x'y"}) == want
    assert "3" in want and "x'y" in want


@pytest.mark.parametrize("fmt,empty", [("json", "[]\n"), ("jsonl", ""), ("table", "n\n-\n(0 rows)\n")])
def test_an_empty_result(samples_wh, capsys, fmt, empty):
    assert run(samples_wh.root, capsys, "SELECT 1 AS n WHERE false", "--format", fmt) == empty


# --- the table fits the terminal -----------------------------------------------------------------------


def in_terminal(args: list[str], columns: int = 80) -> str:
    """What ``warehouse`` prints on a terminal of ``columns`` columns (stdout a pseudo-terminal)."""
    master, slave = terminal(columns)
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen([shutil.which("warehouse"), *args], stdout=slave, stderr=subprocess.PIPE, env=env)
    os.close(slave)
    shown = read_terminal(master)
    with proc.stderr:
        err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    return shown.decode().replace("\r\n", "\n")


def test_select_star_fits_the_terminal_and_names_the_columns_left_out(samples_wh):
    """``select * from responses`` printed 1,469-character lines: now each line fits the terminal (80
    columns here), long values are cut with an ellipsis, and a note names the columns left out."""
    shown = in_terminal(["sql", "SELECT * FROM responses", "--root", str(samples_wh.root)])
    lines = shown.splitlines()
    assert max(wcswidth(line) for line in lines) <= 80, shown
    names = list(samples_wh.rows("SELECT * FROM responses LIMIT 1")[0])
    header = lines[0].split()
    assert header == names[:len(header)] and 1 < len(header) < len(names)
    note = " ".join(lines[lines.index(next(x for x in lines if x.startswith("(227 rows"))) + 1:])
    assert note.startswith(f"({len(names) - len(header)} more columns did not fit in 80 characters: ")
    assert ", ".join(names[len(header):]) in note and "--max-width 0" in note
    assert "…" in shown


def test_off_a_terminal_the_table_is_120_wide_unless_told(samples_wh, capsys):
    out = run(samples_wh.root, capsys, "SELECT * FROM responses")
    assert max(len(line) for line in out.splitlines()) <= 120 and "more columns did not fit in 120 characters" in out
    wide = run(samples_wh.root, capsys, "SELECT * FROM responses", "--max-width", "0")
    assert max(len(line) for line in wide.splitlines()) > 1000 and "more columns" not in wide  # every column, as before
    narrow = run(samples_wh.root, capsys, "SELECT response_id, response FROM responses", "--max-width", "40")
    assert max(len(line) for line in narrow.splitlines()[:-1]) <= 40


def test_wide_characters_take_two_columns(samples_wh, capsys):
    out = run(samples_wh.root, capsys, "SELECT repeat('字', 100) AS t, 'x' AS u", "--max-width", "40")
    assert [wcswidth(line) for line in out.splitlines()[:3]] == [40, 40, 40]  # the CJK cut at 37 columns: 18 of them and …
    assert out.splitlines()[2] == "字" * 18 + "…" + "  x"


def test_an_ascii_table_is_measured_without_wcwidth_and_as_wcwidth_measures_it():
    """Printable ASCII takes one column a character: its width needs no wcwidth (a cold ``warehouse sql`` does
    not import it), and comes out as wcwidth gives it, cut included."""
    import sys

    from warehouse.reading.texttable import cut, width_of

    code = ("import sys; from warehouse.reading.texttable import cut, width_of; "
            "width_of('a path/x.json'); cut('/a/very/long/path/to/file.json', 12); print('wcwidth' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
    for text in ("plain words", "/a/very/long/path/to/some/file.json", "x" * 80, "字 and ASCII", "\\x1b[2J"):
        assert width_of(text) == wcswidth(text)
        for width in (1, 5, 12, 30):
            assert wcswidth(cut(text, width)) <= max(width, 1)


def test_control_characters_from_the_data_are_shown_not_obeyed(samples_wh, capsys):
    """A model's text with an escape sequence (clear the screen) or a right-to-left override is shown as escapes."""
    out = run(samples_wh.root, capsys, "SELECT chr(27) || '[2J' || chr(8238) || 'txt.exe' || chr(7) AS t")
    assert out.splitlines()[2] == "\\x1b[2J\\u202etxt.exe\\x07"
    assert not any(ord(c) < 32 and c != "\n" for c in out)


def test_stats_files_cut_paths_in_the_middle_so_rows_differ(tmp_path, capsys):
    """``stats --files`` cut paths from the end: two files of one deep folder looked the same."""
    deep = tmp_path.joinpath(*["a-rather-long-folder-name"] * 6)
    for name in ("first.json", "second.json"):
        deep.mkdir(parents=True, exist_ok=True)
        (deep / name).write_text('[{"prompt": "p", "response": "r"}]')
    root = tmp_path / "wh"
    assert main(["ingest", str(tmp_path), "--root", str(root), "-q"]) == 0
    assert main(["stats", "--root", str(root), "--files"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith(str(tmp_path)[:5])]
    assert len(rows) == 2 and max(len(line) for line in out.splitlines()) <= 120
    paths = [row.split("  ")[0] for row in rows]
    assert paths[0].endswith("/first.json") and paths[1].endswith("/second.json") and "…" in paths[0]
    assert paths[0].startswith(str(tmp_path)[:8])
