"""The result set loader: rows written one value at a time, Arrow batches within limits out.

Owns ``ResultSetLoader`` (``loader``) and its parts: its states
(``loader_state``), the reader's half of the row protocol (``row_writer``),
the writers of each column (``column_writers``), whole rows at once
(``bulk``), arrays built at harvest (``harvest``), and the rules of each Arrow
type (``values``, ``scalar_values``, ``nested_values``, ``type_rules``).

The floor of the scan: the loader knows nothing of files, formats or
schemas, so any reader can write through it, the scan's row path or one a
user writes. Its modules import ``connect_plugin.errors`` and pyarrow only.

Imports from the scan: nothing.
"""
