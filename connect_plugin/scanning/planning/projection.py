"""From the projection list to the output columns: what each one is and its type.

A name in the projection is, in this order of preference (names match by
the rule of ``names``: without case):

1. the rescued-data column;
2. a provided-schema field marked as an implicit column (``myFqn``);
3. with hive partitioning, a ``key`` of ``key=value`` directories, which
   wins over a file's own column of that name, as in Spark's readers;
4. a table column: a column of the files or of the provided schema (names
   with dots or brackets too);
5. an implicit file column, ``filename``, ``filepath``, ``fqn``, ``suffix``;
6. a partition column ``dirN`` (null for files less deep than N+1);
7. ``name[n]``: element n of a list column (``columns[2]`` on headerless text);
8. ``a.b.c``: member ``b.c`` of a struct column ``a``;
9. otherwise a missing column: nulls, typed as a nullable string.

So an implicit column never replaces a column of the data: a table column
named ``filename`` or ``dir0`` is read as it is, with a list of columns or
with the wildcard, which adds no ``dirN`` the table has; the implicit column
is then reached under another name, a provided-schema field marked as it.
Output columns are named as the user spelled them. Nested syntax shadows an
implicit name, as in Drill: ``filename.a`` is member ``a`` of a table column
``filename``.

The wildcard expands to the table columns, then (positional partitioning)
``dir0..dirN`` up to the deepest file, or (hive partitioning) the partition
keys. Names listed beside ``*`` keep their place, except plain table
columns, which stay at their table position (Drill's ``SELECT *, a``);
partition columns named explicitly are not repeated by the expansion.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

import pyarrow as pa

from connect_plugin.errors import InvalidScanSpec
from connect_plugin.scanning.choices import Partitioning
from connect_plugin.scanning.files.files import ScanFile, max_depth
from connect_plugin.scanning.names import fold
from connect_plugin.scanning.planning.implicit import dir_index, file_column_kind, hive_columns
from connect_plugin.scanning.planning.schema_tracker import TableSchema
from connect_plugin.scanning.request.spec import INDEXED_NAME, ScanSpec


class Kind(Enum):
    TABLE = "table"
    MEMBER = "member"
    ELEMENT = "element"
    FILE = "file"
    DIR = "dir"
    HIVE = "hive"
    MISSING = "missing"
    RESCUED = "rescued"


@dataclass(frozen=True)
class OutputColumn:
    """One output column: where its values come from and its Arrow field.

    ``source`` is the table column (TABLE, MEMBER, ELEMENT), the file column
    kind (FILE) or the folded hive key (HIVE); ``path`` the struct members
    (MEMBER); ``index`` the list element (ELEMENT) or directory level (DIR).
    """

    field: pa.Field
    kind: Kind
    source: str = ""
    path: tuple[str, ...] = ()
    index: int = 0

    @property
    def name(self) -> str:
        return str(self.field.name)


@dataclass(frozen=True)
class Partitions:
    """What the files' locations offer: directory depth and hive keys with their types."""

    depth: int
    hive: Mapping[str, tuple[str, pa.DataType]]


def resolve_projection(
    spec: ScanSpec, table: TableSchema, partitions: Partitions
) -> tuple[OutputColumn, ...]:
    items = ["*"] if spec.columns is None else list(spec.columns)
    resolver = _Resolver(spec, table, partitions)
    explicit = {name: resolver.resolve(name) for name in items if name != "*"}
    if "*" not in items:
        return _checked(table, _with_rescued(spec, table, [explicit[name] for name in items]))
    mentioned = {fold(column.name) for column in explicit.values()}
    mentioned |= {f"dir{column.index}" for column in explicit.values() if column.kind is Kind.DIR}
    mentioned |= {column.source for column in explicit.values() if column.kind is Kind.HIVE}
    result: list[OutputColumn] = []
    for name in items:
        if name == "*":
            result.extend(resolver.wildcard(mentioned))
        elif explicit[name].kind is not Kind.TABLE:
            result.append(explicit[name])
    return _checked(table, _with_rescued(spec, table, result))


def _with_rescued(
    spec: ScanSpec, table: TableSchema, columns: list[OutputColumn]
) -> list[OutputColumn]:
    """The rescued-data column at the end, unless named in place or nothing is projected."""
    name = spec.rescued_column
    if name is None:
        return columns
    if table.field(name) is not None:
        raise InvalidScanSpec(
            f"rescued_column '{name}' is also a column of the files or the schema; "
            "choose another name for the rescued-data column"
        )
    if spec.columns != () and all(c.kind is not Kind.RESCUED for c in columns):
        columns.append(OutputColumn(pa.field(name, pa.string()), Kind.RESCUED, name))
    return columns


def _checked(table: TableSchema, columns: list[OutputColumn]) -> tuple[OutputColumn, ...]:
    """The columns, once none of them reads a table column with an unsettled type conflict."""
    for column in columns:
        if column.kind in (Kind.TABLE, Kind.MEMBER, Kind.ELEMENT):
            table.check(column.source)
    return tuple(columns)


class _Resolver:
    def __init__(self, spec: ScanSpec, table: TableSchema, partitions: Partitions) -> None:
        self.spec = spec
        self.table = table
        self.partitions = partitions
        self.hive = partitions.hive if spec.partitioning is Partitioning.HIVE else {}
        self.list_table = spec.file_format.list_table

    def resolve(self, name: str) -> OutputColumn:
        rescued = self.spec.rescued_column
        if rescued is not None and fold(name) == fold(rescued):
            return OutputColumn(pa.field(name, pa.string()), Kind.RESCUED, rescued)
        table_field = self.table.field(name)
        if table_field is not None and fold(table_field.name) in self.table.implicit:
            return self._implicit(name, self.table.implicit[fold(table_field.name)])
        key = fold(name)
        if key in self.hive:
            return self._hive(name, key)
        if table_field is not None:
            return OutputColumn(table_field.with_name(name), Kind.TABLE, table_field.name)
        kind = file_column_kind(name)
        if kind is not None:
            return OutputColumn(pa.field(name, pa.string(), nullable=False), Kind.FILE, kind)
        index = dir_index(name)
        if index is not None:
            return self._implicit(name, f"dir{index}")
        indexed = INDEXED_NAME.match(name)
        if indexed is not None:
            return self._element(name, indexed.group("base"), int(indexed.group("index")))
        if "." in name:
            return self._member(name)
        if self.list_table:
            raise InvalidScanSpec(
                f"column '{name}' cannot be read from headerless {self.spec.format} files, whose "
                "fields have no names: use columns[n], set the option header=true (csv/tsv), "
                "or give a schema that names the fields by position"
            )
        return _missing(name)

    def _implicit(self, name: str, kind: str) -> OutputColumn:
        index = dir_index(kind)
        if index is None:
            return OutputColumn(pa.field(name, pa.string(), nullable=False), Kind.FILE, kind)
        return OutputColumn(pa.field(name, pa.string()), Kind.DIR, index=index)

    def _hive(self, name: str, key: str) -> OutputColumn:
        provided = self.table.field(name)
        arrow_type = provided.type if provided is not None else self.hive[key][1]
        return OutputColumn(pa.field(name, arrow_type), Kind.HIVE, key)

    def _element(self, name: str, base: str, index: int) -> OutputColumn:
        table_field = self.table.field(base)
        if table_field is None:
            return _missing(name)
        if not pa.types.is_list(table_field.type):
            raise InvalidScanSpec(
                f"column '{name}' asks for element {index} of '{table_field.name}', which is "
                f"{table_field.type}, not a list; name the column without [{index}]"
            )
        element = pa.field(name, table_field.type.value_type)
        return OutputColumn(element, Kind.ELEMENT, table_field.name, index=index)

    def _member(self, name: str) -> OutputColumn:
        base, *members = name.split(".")
        table_field = self.table.field(base)
        if table_field is None:
            return _missing(name)
        arrow_type = table_field.type
        path: list[str] = []
        for depth, member in enumerate(members):
            if not pa.types.is_struct(arrow_type):
                inside = ".".join([table_field.name, *path])
                raise InvalidScanSpec(
                    f"column '{name}' asks for member '{member}' of '{inside}', which is "
                    f"{arrow_type}, not a struct; check the name"
                )
            child = _struct_member(arrow_type, member)
            if child is None:
                rest = tuple(members[depth:])
                return OutputColumn(
                    pa.field(name, pa.string()), Kind.MEMBER, table_field.name, (*path, *rest)
                )
            path.append(child.name)
            arrow_type = child.type
        return OutputColumn(pa.field(name, arrow_type), Kind.MEMBER, table_field.name, tuple(path))

    def wildcard(self, mentioned: set[str]) -> list[OutputColumn]:
        result = []
        taken = set(mentioned)
        for table_field in self.table.fields:
            key = fold(table_field.name)
            if key in self.table.implicit:
                column = self._implicit(table_field.name, self.table.implicit[key])
                if column.kind is Kind.DIR:
                    taken.add(f"dir{column.index}")
            elif key in self.hive:
                column = self._hive(table_field.name, key)
            else:
                column = OutputColumn(table_field, Kind.TABLE, table_field.name)
            if column.kind is Kind.TABLE or key not in mentioned:
                result.append(column)
                taken.add(key)
        if self.hive:
            for key, (spelling, arrow_type) in self.hive.items():
                if key not in taken:
                    result.append(OutputColumn(pa.field(spelling, arrow_type), Kind.HIVE, key))
        else:
            for index in range(self.partitions.depth):
                name = f"dir{index}"
                if name not in taken:
                    result.append(OutputColumn(pa.field(name, pa.string()), Kind.DIR, index=index))
        return result


def _struct_member(struct_type: pa.DataType, name: str) -> pa.Field | None:
    key = fold(name)
    for index in range(struct_type.num_fields):
        member = struct_type.field(index)
        if fold(member.name) == key:
            return member
    return None


def _missing(name: str) -> OutputColumn:
    return OutputColumn(pa.field(name, pa.string()), Kind.MISSING)


def partitions_of(spec: ScanSpec, files: Sequence[ScanFile]) -> Partitions:
    hive = hive_columns(files) if spec.partitioning is Partitioning.HIVE else {}
    return Partitions(max_depth(files), hive)
