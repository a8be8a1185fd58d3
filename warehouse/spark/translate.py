"""The warehouse's DuckDB views in Spark SQL: sqlglot translates, a few rules fill its gaps.

``to_spark(statement)`` parses a view of ``sql/`` (or a format's ``views``) as DuckDB,
rewrites the constructs sqlglot leaves DuckDB-shaped or translates with another meaning
(``RULES``, each one construct, wherever a view uses it), and writes Spark SQL. There
is no second copy of any view: a view added to ``sql/`` is translated the same way, and
``tests/spark/test_spark.py`` runs every view on both engines and compares their rows.

The rules, and why each one is needed:

* ``raw.<table>`` -> ``raw_<table>``: Spark's temporary views have one-part names.
* ``CREATE VIEW`` -> ``CREATE OR REPLACE TEMPORARY VIEW``: views of this session only.
* ``regexp_extract(s, pattern, ['a', 'b'])`` (DuckDB: a struct of the named groups) ->
  ``named_struct('a', regexp_extract(s, pattern, 1), 'b', ...)``.
* ``len(list)`` -> ``size(list)`` (sqlglot writes ``length``, which Spark reads as a string's).
* ``list[i]`` -> ``try_element_at(list, i)`` and ``list[a:b]`` -> ``slice(...)``: DuckDB gives
  NULL or an empty list out of range, Spark (ANSI mode, its default) raises; and Spark has
  no slice syntax.
* ``list(x ORDER BY k)`` -> the values of ``array_sort(collect_list(struct(k, x)))``:
  ``collect_list`` keeps no order, and sqlglot drops the ORDER BY.
* ``any_value(x)`` -> ``any_value(x, true)``: DuckDB's skips NULLs (sqlglot writes
  ``IGNORE NULLS`` after a ``FILTER`` clause, where Spark does not accept it).
* ``to_json(struct)`` keeps NULL fields, as DuckDB's does (Spark drops them by default),
  so a hash of it (``dpo_pairs.conversation_key``) is the same on both engines.
* ``CAST(NULL AS JSON)`` -> ``CAST(NULL AS STRING)``: JSON is text in Spark, and sqlglot writes
  ``to_json(NULL)``, which Spark refuses (a NULL has no type to write as JSON).
* ``strptime`` -> ``to_timestamp_ntz``: DuckDB's gives a TIMESTAMP without time zone.
* ``json_each(x) AS c`` -> ``LATERAL variant_explode(parse_json(x)) AS c``, and ``c.value``
  -> ``to_json(c.value)``: each key of a JSON object with its value as JSON text.
* ``FROM r JOIN x USING (c)`` -> ``ON r.c = x.c`` (inner and left joins, ``c`` always
  qualified): Spark moves a USING column to the front of ``r.*``; DuckDB leaves it in place.

Limits (docs/spark.md): regular expressions run on Java's engine, not RE2 (the views use
the syntax both share); a list index or slice bound below 1 is not counted from the end;
JSON numbers inside ``json_each`` values are written as Spark writes them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # sqlglot comes with the `spark` extra: imported where it is used
    from sqlglot import exp

RAW_PREFIX = "raw_"


def to_spark(statement: str) -> str:
    """One DuckDB statement (a view of ``sql/``) as Spark SQL."""
    import sqlglot

    tree = sqlglot.parse_one(statement, read="duckdb")
    for rule in RULES:
        tree = tree.transform(rule, copy=False)
    return tree.sql(dialect="spark")


def raw_name(table: str) -> str:
    """The Spark name of ``raw.<table>``."""
    return RAW_PREFIX + table


def _raw_tables(node: exp.Expression) -> exp.Expression:
    from sqlglot import exp

    if isinstance(node, exp.Table) and node.db == "raw" and not node.catalog:
        node.set("this", exp.to_identifier(raw_name(node.name)))
        node.set("db", None)
    return node


def _temporary_views(node: exp.Expression) -> exp.Expression:
    from sqlglot import exp

    if isinstance(node, exp.Create) and (node.kind or "").upper() == "VIEW":
        node.set("replace", True)
        properties = node.args.get("properties") or exp.Properties(expressions=[])
        if not any(isinstance(p, exp.TemporaryProperty) for p in properties.expressions):
            properties.append("expressions", exp.TemporaryProperty())
        node.set("properties", properties)
    return node


def _named_groups(node: exp.Expression) -> exp.Expression:
    from sqlglot import exp

    group = node.args.get("group") if isinstance(node, exp.RegexpExtract) else None
    if not isinstance(group, exp.Array):
        return node
    fields: list[exp.Expression] = []
    for n, name in enumerate(group.expressions, start=1):
        fields += [name.copy(), exp.RegexpExtract(this=node.this.copy(), expression=node.expression.copy(),
                                                   group=exp.Literal.number(n))]
    return exp.Anonymous(this="named_struct", expressions=fields)


def _list_length(node: exp.Expression) -> exp.Expression:
    from sqlglot import exp

    if isinstance(node, exp.Length) and isinstance(node.this, (exp.Split, exp.Array, exp.ArrayAgg)):
        return exp.ArraySize(this=node.this)
    return node


def _list_brackets(node: exp.Expression) -> exp.Expression:
    from sqlglot import exp

    if not isinstance(node, exp.Bracket) or len(node.expressions) != 1:
        return node
    [index] = node.expressions
    if isinstance(index, exp.Slice):  # DuckDB: 1-based, both ends included, clamped; a NULL bound gives NULL
        def at_least(value: exp.Expression, least: int) -> exp.Expression:  # NULL stays NULL (greatest skips it)
            return exp.If(this=exp.LT(this=value.copy(), expression=exp.Literal.number(least)),
                          true=exp.Literal.number(least), false=value.copy())

        start = at_least(index.this, 1)
        length = at_least(exp.Add(this=exp.Sub(this=index.expression.copy(), expression=start.copy()),
                                  expression=exp.Literal.number(1)), 0)
        return exp.Anonymous(this="slice", expressions=[node.this, start, length])
    # sqlglot shifts a literal index to 0-based in its tree (DuckDB's `[1]` is 0 there) and
    # leaves any other index as DuckDB wrote it (1-based)
    one_based = exp.Literal.number(int(index.this) + 1) if isinstance(index, exp.Literal) and index.is_int else index
    return exp.Anonymous(this="try_element_at", expressions=[node.this, one_based])


def _ordered_lists(node: exp.Expression) -> exp.Expression:
    from sqlglot import exp

    where = None
    if isinstance(node, exp.Filter) and _is_ordered_list(node.this):  # list(x ORDER BY k) FILTER (WHERE c)
        node, where = node.this, node.expression
    elif not _is_ordered_list(node) or isinstance(node.parent, exp.Filter):
        return node
    order = node.this
    keys = []
    for n, ordered in enumerate(order.expressions):
        if ordered.args.get("desc"):  # array_sort sorts ascending: no view needs more yet
            raise NotImplementedError(f"list(... ORDER BY ... DESC) has no Spark translation: {node.sql('duckdb')}")
        keys += [exp.Literal.string(f"k{n}"), ordered.this.copy()]
    entry = exp.Anonymous(this="named_struct", expressions=[*keys, exp.Literal.string("v"), order.this.copy()])
    collected: exp.Expression = exp.Anonymous(this="collect_list", expressions=[entry])
    if where is not None:
        collected = exp.Filter(this=collected, expression=where.copy())
    sorted_ = exp.Anonymous(this="array_sort", expressions=[collected])
    lam = exp.Lambda(this=exp.column("v", table="e"), expressions=[exp.to_identifier("e")])
    return exp.Anonymous(this="transform", expressions=[sorted_, lam])


def _is_ordered_list(node: exp.Expression) -> bool:
    from sqlglot import exp

    return isinstance(node, exp.ArrayAgg) and isinstance(node.this, exp.Order)


def _any_value_skips_nulls(node: exp.Expression) -> exp.Expression:
    from sqlglot import exp

    if isinstance(node, exp.IgnoreNulls) and isinstance(node.this, exp.AnyValue):
        node = node.this
    if isinstance(node, exp.AnyValue):
        return exp.Anonymous(this="any_value", expressions=[node.this.copy(), exp.true()])
    return node


def _to_json_keeps_nulls(node: exp.Expression) -> exp.Expression:
    from sqlglot import exp

    if isinstance(node, exp.Anonymous) and node.name.lower() == "to_json" and len(node.expressions) == 1:
        options = exp.Anonymous(this="map", expressions=[exp.Literal.string("ignoreNullFields"),
                                                          exp.Literal.string("false")])
        node.append("expressions", options)
    return node


def _json_null_as_text(node: exp.Expression) -> exp.Expression:
    from sqlglot import exp

    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Null) and node.to.is_type(exp.DataType.Type.JSON):
        return exp.cast(exp.null(), exp.DataType.build("string"))
    return node


def _naive_timestamps(node: exp.Expression) -> exp.Expression:
    from sqlglot import exp

    if not isinstance(node, exp.StrToTime):
        return node
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.time import format_time

    spark = Dialect.get_or_raise("spark")  # the format, from sqlglot's strftime form to Spark's pattern
    pattern = format_time(node.args["format"].name, spark.INVERSE_TIME_MAPPING, spark.INVERSE_TIME_TRIE)
    return exp.Anonymous(this="to_timestamp_ntz", expressions=[node.this, exp.Literal.string(pattern)])


def _json_each(node: exp.Expression) -> exp.Expression:
    from sqlglot import exp

    if not isinstance(node, exp.Select):
        return node
    for join in node.args.get("joins") or []:
        table = join.this
        if isinstance(table, exp.Table) and isinstance(table.this, exp.Anonymous) \
                and table.this.name.lower() == "json_each":
            alias = table.alias
            [source] = table.this.expressions
            exploded = exp.Anonymous(this="variant_explode",
                                     expressions=[exp.Anonymous(this="parse_json", expressions=[source.copy()])])
            join.set("this", exp.Lateral(this=exploded, alias=exp.TableAlias(this=exp.to_identifier(alias))))
            for column in list(node.find_all(exp.Column)):
                if column.table == alias and column.name == "value" and not isinstance(column.parent, exp.Lateral):
                    column.replace(exp.Anonymous(this="to_json", expressions=[column.copy()]))
    return node


def _using_as_on(node: exp.Expression) -> exp.Expression:
    """``FROM r JOIN x USING (c)`` -> ``ON r.c = x.c`` where nothing names ``c`` unqualified: Spark
    puts a USING column first in ``r.*``, DuckDB leaves it where ``r`` has it. With inner and left
    joins only, the output's ``c`` is the first table's, so the rewrite keeps every value."""
    from sqlglot import exp

    joins = node.args.get("joins") if isinstance(node, exp.Select) else None
    if not joins or not any(j.args.get("using") for j in joins):
        return node
    first = node.args["from_"].this
    if not first.alias_or_name or any(j.side in ("RIGHT", "FULL") for j in joins):
        return node
    using = {i.name for j in joins for i in j.args.get("using") or []}
    for column in node.find_all(exp.Column, exp.Star):
        if column.find_ancestor(exp.Select) is not node:
            continue  # a subquery's own columns
        if isinstance(column, exp.Star) and not isinstance(column.parent, exp.Column) or \
                isinstance(column, exp.Column) and not column.table and column.name in using:
            return node  # `*` or an unqualified USING column: keep Spark's own reading of USING
    for join in joins:
        names = join.args.get("using")
        if names:
            right = join.this.alias_or_name
            on = exp.and_(*(exp.EQ(this=exp.column(n.name, table=first.alias_or_name), expression=exp.column(n.name, table=right))
                            for n in names))
            join.set("using", None)
            join.set("on", on)
    return node


#: applied in this order, each over the whole tree
RULES: tuple[Callable[[exp.Expression], exp.Expression], ...] = (
    _raw_tables,
    _temporary_views,
    _named_groups,
    _list_length,
    _ordered_lists,  # before _list_brackets: `list(...)[1]` indexes the translated list
    _list_brackets,
    _any_value_skips_nulls,
    _to_json_keeps_nulls,
    _json_null_as_text,
    _naive_timestamps,
    _json_each,
    _using_as_on,
)
