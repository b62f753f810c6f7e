"""What the delimited-text formats share: their options and how a file starts.

csv and tsv are the same reader with different delimiters (``,`` and tab),
as in Drill. ``text`` is a line reader: each line is a record, split on the
``delimiter`` option if one is given, with no quoting. Without a header (the
default for csv and tsv, as in Spark and Drill) the fields of a line form
the list column ``columns``, unless a provided schema names them by
position, as Spark's csv reader does.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pyarrow as pa

from connect_plugin.scanning.spec import ScanSpec

HEAD_CHUNK = 64 * 1024
COLUMNS = "columns"
"""The list column of a headerless delimited file, as Drill names it."""

STRING_LIST = pa.list_(pa.field("element", pa.string()))
"""The type of ``columns``: the fields of a line, in order."""


@dataclass(frozen=True)
class DelimitedOptions:
    delimiter: str
    quote: str | None
    escape: str | None
    null_value: str | None
    multiline: bool


def delimited_options(spec: ScanSpec) -> DelimitedOptions:
    default = "\t" if spec.format == "tsv" else ","
    quote = spec.option("quote", '"')
    escape = spec.option("escape")
    return DelimitedOptions(
        delimiter=spec.option("delimiter", default) or default,
        quote=quote or None,
        escape=escape or None,
        null_value=spec.option("nullvalue"),
        multiline=spec.option("multiline") == "true",
    )


def is_headerless(spec: ScanSpec) -> bool:
    """Whether the file's own fields have no names: headerless csv/tsv, and text."""
    return spec.format == "text" or (spec.format in ("csv", "tsv") and not spec.has_header)


def has_list_table(spec: ScanSpec) -> bool:
    """Whether the table is Drill's single ``columns`` list (headerless, no provided schema)."""
    return is_headerless(spec) and spec.provided_schema is None


def read_head(path: str, limit: int) -> tuple[bytes, bool]:
    """The first ``limit`` bytes cut after the last whole line, and whether that is all the file.

    A first line longer than ``limit`` is read to its end, so a sample always
    holds at least one whole record.
    """
    with open(path, "rb") as handle:
        data = handle.read(limit)
        if len(data) < limit:
            return data, True
        cut = data.rfind(b"\n")
        while cut < 0:
            more = handle.read(HEAD_CHUNK)
            if not more:
                return data, True
            found = more.find(b"\n")
            if found >= 0:
                return data + more[: found + 1], False
            data += more
        return data[: cut + 1], False


def python_csv_reader(lines: Iterable[str], options: DelimitedOptions) -> Iterator[list[str]]:
    """A ``csv.reader`` that splits records the way pyarrow's csv parser does."""
    return csv.reader(
        lines,
        delimiter=options.delimiter,
        quotechar=options.quote,
        escapechar=options.escape,
        quoting=csv.QUOTE_MINIMAL if options.quote else csv.QUOTE_NONE,
        doublequote=options.quote is not None and options.escape is None,
        strict=False,
    )


def csv_header(path: str, spec: ScanSpec) -> list[str]:
    """The names on a csv/tsv file's header line; empty for an empty file."""
    head, _ = read_head(path, spec.sample_bytes)
    text = head.decode("utf-8", errors="replace")
    for row in python_csv_reader(io.StringIO(text), delimited_options(spec)):
        if row:
            return row
    return []
