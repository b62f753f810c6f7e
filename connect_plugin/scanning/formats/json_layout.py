"""How the records of a json file are laid out, and how ``auto`` tells the layouts apart.

``lines`` is one object per line (NDJSON); ``array`` a top-level array of
objects (``[{...}, {...}]``, as APIs and tools export); ``documents``
objects one after another with any white space between them, pretty-printed
or not (``{...}{...}``, ``jq`` output). DuckDB's ``read_json`` calls the
same choice ``format`` (``newline_delimited``, ``array``, ``unstructured``);
Spark's ``multiLine`` reads a file as one value, an array or an object.

``auto`` decides per file from its head, as DuckDB does: a first non-blank
``[`` is an array; a first value that spans lines, or is followed by
another on its line, makes documents; anything else is read as lines,
where a broken first line is one bad record, not a reason to misread the
rest of the file: a first value that breaks past its line is still a line
when one of the next lines is an object, or when every line of the head
starts one (a pretty-printed object's inner lines never do).
"""

from __future__ import annotations

import json

from connect_plugin.scanning.choices import ScanChoice

LOOKAHEAD_LINES = 2
"""Lines after a broken first line that tell a bad NDJSON record from a pretty-printed object."""


class JsonLayout(ScanChoice):
    """How the records of a json file are laid out (DuckDB's ``format`` of ``read_json``)."""

    AUTO = "auto"
    LINES = "lines"
    ARRAY = "array"
    DOCUMENTS = "documents"


def detect_layout(head: bytes) -> JsonLayout:
    """The layout of a file whose first bytes are ``head`` (any length; it may end mid-value)."""
    text = head.lstrip()
    if text.startswith(b"["):
        return JsonLayout.ARRAY
    if not text.startswith(b"{"):
        return JsonLayout.LINES
    decoded = text.decode("utf-8", errors="replace")
    line_end = decoded.find("\n")
    try:
        _, end = json.JSONDecoder().raw_decode(decoded)
    except json.JSONDecodeError as exc:
        if line_end < 0 or exc.pos <= line_end:
            return JsonLayout.LINES
        following = [line for line in decoded[line_end + 1 :].splitlines() if line.strip()]
        if any(_is_object(line) for line in following[:LOOKAHEAD_LINES]):
            return JsonLayout.LINES
        if all(line.startswith("{") for line in following):
            return JsonLayout.LINES
        return JsonLayout.DOCUMENTS
    if 0 <= line_end < end:
        return JsonLayout.DOCUMENTS
    rest = decoded[end:] if line_end < 0 else decoded[end:line_end]
    return JsonLayout.DOCUMENTS if rest.strip() else JsonLayout.LINES


def _is_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False
