"""The shared readers of the format packages (``warehouse.formats.fields``): one way to read nested objects."""

from __future__ import annotations

import re

import pytest

from warehouse.formatkit.records import RecordContext, RecordError
from warehouse.formats.fields import Fields, as_fields, children

from ..conftest import REPO

CTX = RecordContext("/d/f.json", "[3]", 3, "x")


def test_children_yield_each_element_with_its_reader_and_its_place():
    got = list(children([{"a": 1}, {"b": 2}], ".messages", "message", CTX))
    assert [(i, f.obj, f.sub, locator) for i, f, locator in got] == [
        (0, {"a": 1}, ".messages[0]", "[3].messages[0]"),
        (1, {"b": 2}, ".messages[1]", "[3].messages[1]"),
    ]
    assert isinstance(got[0][1], Fields)
    assert list(children(None, ".messages", "message", CTX)) == []
    assert [locator for _, _, locator in children([{}], ".x", "x")] == [".x[0]"]  # without a context: the sub-locator


def test_a_child_that_is_not_an_object_names_what_and_where():
    walk = children([{"a": 1}, 3], ".messages", "message", CTX)
    next(walk)  # the elements before it are read
    with pytest.raises(RecordError) as e:
        next(walk)
    assert (e.value.message, e.value.sub_locator) == ("expected a JSON object for the message, got number 3", ".messages[1]")


def test_a_format_reader_of_the_same_shape_can_be_given():
    class Reader:
        def __init__(self, obj, sub):
            self.obj, self.sub = obj, sub

    [(_, reader, _)] = children([{"k": 1}], ".annotations", "annotation", CTX, Reader)
    assert isinstance(reader, Reader) and reader.sub == ".annotations[0]"
    assert isinstance(as_fields({"k": 1}, "thing", ".t", Reader), Reader)
    with pytest.raises(RecordError, match=r"expected a JSON object for the thing, got array \[\]"):
        as_fields([], "thing")


def test_the_format_packages_read_nested_objects_through_the_helpers():
    """`Fields(expect_object(item, what, sub), sub)` written out by hand was the idiom 25 times: now it is
    `as_fields` (one object) or `children` (a list of them, with each element's locator)."""
    by_hand = re.compile(r"\b\w+\(\s*expect_object\(")
    packages = [p for p in sorted((REPO / "ingest").rglob("*.py")) if p != REPO / "ingest" / "fields.py"]
    found = [f"{p.relative_to(REPO)}:{n}" for p in packages
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if by_hand.search(line)]
    assert found == []
