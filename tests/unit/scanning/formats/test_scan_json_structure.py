"""Cutting array and document json files into records, and telling the layouts apart."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connect_plugin.scanning.formats.json_layout import JsonLayout, detect_layout
from connect_plugin.scanning.formats.json_structure import (
    Region,
    count_units,
    record_lines,
    units,
)

ARRAY, DOCUMENTS = JsonLayout.ARRAY, JsonLayout.DOCUMENTS


def pieces(data: bytes, size: int) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


def cut(data: bytes, layout: JsonLayout, size: int | None = None) -> list[tuple[bytes, int, int]]:
    found = units(pieces(data, size or max(len(data), 1)), layout)
    return [(unit.text, unit.offset, unit.line) for unit in found]


def test_array_elements_are_cut_at_the_commas_of_the_top_level_array_only() -> None:
    data = b'[{"a": "x,]}\\"{"}, {"b": [{"c": 1}, {"c": 2}]},\n 5]'
    assert cut(data, ARRAY) == [
        (b'{"a": "x,]}\\"{"}', 1, 1),
        (b'{"b": [{"c": 1}, {"c": 2}]}', 19, 1),
        (b"5", 49, 2),
    ]


def test_documents_are_each_top_level_value_with_its_line() -> None:
    data = b'{"a": 1}{"a": 2}\n 7 \n{\n  "b": "}\\\\"\n}\n[1]'
    found = list(units(iter([data]), DOCUMENTS))
    assert [(u.text, u.line, u.region) for u in found] == [
        (b'{"a": 1}', 1, Region.CONTENT),
        (b'{"a": 2}', 1, Region.CONTENT),
        (b"7", 2, Region.GAP),
        (b'{\n  "b": "}\\\\"\n}', 3, Region.CONTENT),
        (b"[1]", 6, Region.CONTENT),
    ]


def test_an_unbalanced_closing_bracket_is_the_last_unit() -> None:
    assert cut(b'{"a": 1} ] {"b": 2}', DOCUMENTS) == [(b'{"a": 1}', 0, 1), (b"]", 9, 1)]
    assert sum(count_units(iter([b'{"a": 1} ] {"b": 2}']), DOCUMENTS)) == 2


@pytest.mark.parametrize("data", [b"[]", b"  [ \n ]  ", b"[][]", b""])
def test_an_empty_array_has_no_units(data: bytes) -> None:
    assert cut(data, ARRAY) == []
    assert sum(count_units(iter([data]), ARRAY)) == 0
    assert b"".join(record_lines(iter([data]), ARRAY)).strip() == b""


def test_an_object_outside_the_arrays_stops_the_fast_path_and_is_a_unit() -> None:
    data = b'[{"a": 1}] {"o": 2}'
    with pytest.raises(pa.ArrowInvalid, match="outside a top-level array"):
        list(record_lines(iter([data]), ARRAY))
    found = list(units(iter([data]), ARRAY))
    assert [(u.text, u.region) for u in found] == [
        (b'{"a": 1}', Region.ELEMENT),
        (b'{"o": 2}', Region.CONTENT),
    ]


def test_record_lines_put_each_element_on_its_own_line_in_whole_blocks() -> None:
    data = b'[\n  {"a": 1,\n   "b": "[,]"},\n  {"a": 2}\n]'
    blocks = list(record_lines(pieces(data, 7), ARRAY))
    assert all(block.endswith(b"\n") for block in blocks)
    lines = [line for line in b"".join(blocks).split(b"\n") if line.strip()]
    assert [json.loads(line) for line in lines] == [{"a": 1, "b": "[,]"}, {"a": 2}]


@pytest.mark.parametrize(
    ("head", "layout"),
    [
        (b'  [{"a": 1}]', JsonLayout.ARRAY),
        (b"\n[\n", JsonLayout.ARRAY),
        (b'{"a": 1}\n{"a": 2}\n', JsonLayout.LINES),
        (b'{"a": 1}', JsonLayout.LINES),
        (b'{"a": 1}{"a": 2}\n', JsonLayout.DOCUMENTS),
        (b'{"a": 1} {"a": 2}', JsonLayout.DOCUMENTS),
        (b'{\n  "a": 1\n}\n', JsonLayout.DOCUMENTS),
        (b'{\n  "a": "' + b"x" * 100, JsonLayout.DOCUMENTS),
        (b'{"a": 1,,}\n{"a": 2}\n', JsonLayout.LINES),
        (b'{"a": 1\n{"a": 2}\n', JsonLayout.LINES),
        (b'{"id": 4, "name": \n{"id": 3, "name": \n', JsonLayout.LINES),
        (b'{\n  "a": {\n', JsonLayout.DOCUMENTS),
        (b"7\n", JsonLayout.LINES),
        (b"", JsonLayout.LINES),
    ],
)
def test_auto_tells_the_layout_from_the_head(head: bytes, layout: JsonLayout) -> None:
    assert detect_layout(head) is layout


scalars = st.one_of(
    st.integers(-(10**6), 10**6),
    st.booleans(),
    st.none(),
    st.text(alphabet='ab{}[],"\\\n\t é', max_size=6),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(alphabet='ab"\\{', max_size=3), inner, max_size=3),
    max_leaves=6,
)
records = st.dictionaries(st.text(alphabet="abc", min_size=1, max_size=2), values, max_size=4)


def written(value: Any, pretty: bool) -> str:
    return json.dumps(value, indent=2 if pretty else None, ensure_ascii=False)


@settings(max_examples=150, deadline=None)
@given(
    items=st.lists(st.one_of(records, scalars), max_size=6),
    layout=st.sampled_from([ARRAY, DOCUMENTS]),
    pretty=st.booleans(),
    separator=st.sampled_from(["", " ", "\n", "\n\n  "]),
    size=st.integers(1, 64),
)
def test_units_and_counts_do_not_depend_on_where_blocks_end(
    items: list[Any], layout: JsonLayout, pretty: bool, separator: str, size: int
) -> None:
    """Every element (array) or top-level value (documents) is one unit; scalars side by
    side at the top level are one stray unit; offsets, lines and counts survive any cut."""
    texts = [written(item, pretty) for item in items]
    between = separator or " "
    if layout is ARRAY:
        data = ("[" + ("," + separator).join(texts) + "]").encode()
        expected = texts
    else:
        data = between.join(texts).encode()
        expected = []
        for item, text in zip(items, texts, strict=True):
            stray = not isinstance(item, (dict, list))
            if stray and expected and expected[-1][0]:
                expected[-1] = (True, expected[-1][1] + between + text)
            else:
                expected.append((stray, text))
        expected = [text for _, text in expected]
    whole = cut(data, layout)
    assert [text.decode() for text, _, _ in whole] == [text.strip() for text in expected]
    assert all(data[offset:].startswith(text) for text, offset, _ in whole)
    assert all(data[:offset].count(b"\n") + 1 == line for _, offset, line in whole)
    assert cut(data, layout, size) == whole
    assert sum(count_units(pieces(data, size), layout)) == len(whole)
