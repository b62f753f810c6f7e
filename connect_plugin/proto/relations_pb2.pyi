from pyspark.sql.connect.proto import relations_pb2 as _relations_pb2
from pyspark.sql.connect.proto import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SchemaPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SCHEMA_POLICY_LENIENT: _ClassVar[SchemaPolicy]
    SCHEMA_POLICY_STRICT: _ClassVar[SchemaPolicy]

class BadRecordPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BAD_RECORD_POLICY_FAIL: _ClassVar[BadRecordPolicy]
    BAD_RECORD_POLICY_SKIP: _ClassVar[BadRecordPolicy]
    BAD_RECORD_POLICY_NULL: _ClassVar[BadRecordPolicy]
    BAD_RECORD_POLICY_REJECT: _ClassVar[BadRecordPolicy]

class MissingColumns(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MISSING_COLUMNS_NULL: _ClassVar[MissingColumns]
    MISSING_COLUMNS_ERROR: _ClassVar[MissingColumns]

class Evolution(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EVOLUTION_UNSPECIFIED: _ClassVar[Evolution]
    EVOLUTION_ADD_NEW_COLUMNS: _ClassVar[Evolution]
    EVOLUTION_FAIL_ON_NEW_COLUMNS: _ClassVar[Evolution]
    EVOLUTION_RESCUE: _ClassVar[Evolution]
    EVOLUTION_NONE: _ClassVar[Evolution]

class Compression(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COMPRESSION_AUTO: _ClassVar[Compression]
    COMPRESSION_NONE: _ClassVar[Compression]
    COMPRESSION_GZIP: _ClassVar[Compression]
    COMPRESSION_BZIP2: _ClassVar[Compression]
    COMPRESSION_ZSTD: _ClassVar[Compression]

class Partitioning(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PARTITIONING_DIRS: _ClassVar[Partitioning]
    PARTITIONING_HIVE: _ClassVar[Partitioning]
SCHEMA_POLICY_LENIENT: SchemaPolicy
SCHEMA_POLICY_STRICT: SchemaPolicy
BAD_RECORD_POLICY_FAIL: BadRecordPolicy
BAD_RECORD_POLICY_SKIP: BadRecordPolicy
BAD_RECORD_POLICY_NULL: BadRecordPolicy
BAD_RECORD_POLICY_REJECT: BadRecordPolicy
MISSING_COLUMNS_NULL: MissingColumns
MISSING_COLUMNS_ERROR: MissingColumns
EVOLUTION_UNSPECIFIED: Evolution
EVOLUTION_ADD_NEW_COLUMNS: Evolution
EVOLUTION_FAIL_ON_NEW_COLUMNS: Evolution
EVOLUTION_RESCUE: Evolution
EVOLUTION_NONE: Evolution
COMPRESSION_AUTO: Compression
COMPRESSION_NONE: Compression
COMPRESSION_GZIP: Compression
COMPRESSION_BZIP2: Compression
COMPRESSION_ZSTD: Compression
PARTITIONING_DIRS: Partitioning
PARTITIONING_HIVE: Partitioning

class CreateTempTableAsSelect(_message.Message):
    __slots__ = ("session_id", "name", "input", "column_names", "partition_columns", "format", "options", "if_not_exists", "or_replace", "workspace", "schema")
    class OptionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    COLUMN_NAMES_FIELD_NUMBER: _ClassVar[int]
    PARTITION_COLUMNS_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    IF_NOT_EXISTS_FIELD_NUMBER: _ClassVar[int]
    OR_REPLACE_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    name: str
    input: _relations_pb2.Relation
    column_names: _containers.RepeatedScalarFieldContainer[str]
    partition_columns: _containers.RepeatedScalarFieldContainer[str]
    format: str
    options: _containers.ScalarMap[str, str]
    if_not_exists: bool
    or_replace: bool
    workspace: str
    schema: str
    def __init__(self, session_id: _Optional[str] = ..., name: _Optional[str] = ..., input: _Optional[_Union[_relations_pb2.Relation, _Mapping]] = ..., column_names: _Optional[_Iterable[str]] = ..., partition_columns: _Optional[_Iterable[str]] = ..., format: _Optional[str] = ..., options: _Optional[_Mapping[str, str]] = ..., if_not_exists: bool = ..., or_replace: bool = ..., workspace: _Optional[str] = ..., schema: _Optional[str] = ...) -> None: ...

class DropTempTable(_message.Message):
    __slots__ = ("session_id", "name", "if_exists")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    IF_EXISTS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    name: str
    if_exists: bool
    def __init__(self, session_id: _Optional[str] = ..., name: _Optional[str] = ..., if_exists: bool = ...) -> None: ...

class ListTempTables(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class ReadTempTable(_message.Message):
    __slots__ = ("session_id", "name")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    name: str
    def __init__(self, session_id: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class Scan(_message.Message):
    __slots__ = ("session_id", "files", "table", "columns", "wildcard", "schema", "schema_ddl", "limits", "schema_policy", "on_error", "partitioning", "options", "count_rows", "evolution", "rescued_column", "compression", "rejects_table", "file_filter", "missing_columns", "sample_bytes", "call_id")
    class OptionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class Files(_message.Message):
        __slots__ = ("paths", "format")
        PATHS_FIELD_NUMBER: _ClassVar[int]
        FORMAT_FIELD_NUMBER: _ClassVar[int]
        paths: _containers.RepeatedScalarFieldContainer[str]
        format: str
        def __init__(self, paths: _Optional[_Iterable[str]] = ..., format: _Optional[str] = ...) -> None: ...
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    TABLE_FIELD_NUMBER: _ClassVar[int]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    WILDCARD_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_DDL_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_POLICY_FIELD_NUMBER: _ClassVar[int]
    ON_ERROR_FIELD_NUMBER: _ClassVar[int]
    PARTITIONING_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    COUNT_ROWS_FIELD_NUMBER: _ClassVar[int]
    EVOLUTION_FIELD_NUMBER: _ClassVar[int]
    RESCUED_COLUMN_FIELD_NUMBER: _ClassVar[int]
    COMPRESSION_FIELD_NUMBER: _ClassVar[int]
    REJECTS_TABLE_FIELD_NUMBER: _ClassVar[int]
    FILE_FILTER_FIELD_NUMBER: _ClassVar[int]
    MISSING_COLUMNS_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_BYTES_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    files: Scan.Files
    table: str
    columns: _containers.RepeatedScalarFieldContainer[str]
    wildcard: bool
    schema: _types_pb2.DataType
    schema_ddl: str
    limits: BatchLimits
    schema_policy: SchemaPolicy
    on_error: BadRecordPolicy
    partitioning: Partitioning
    options: _containers.ScalarMap[str, str]
    count_rows: bool
    evolution: Evolution
    rescued_column: str
    compression: Compression
    rejects_table: str
    file_filter: str
    missing_columns: MissingColumns
    sample_bytes: int
    call_id: str
    def __init__(self, session_id: _Optional[str] = ..., files: _Optional[_Union[Scan.Files, _Mapping]] = ..., table: _Optional[str] = ..., columns: _Optional[_Iterable[str]] = ..., wildcard: bool = ..., schema: _Optional[_Union[_types_pb2.DataType, _Mapping]] = ..., schema_ddl: _Optional[str] = ..., limits: _Optional[_Union[BatchLimits, _Mapping]] = ..., schema_policy: _Optional[_Union[SchemaPolicy, str]] = ..., on_error: _Optional[_Union[BadRecordPolicy, str]] = ..., partitioning: _Optional[_Union[Partitioning, str]] = ..., options: _Optional[_Mapping[str, str]] = ..., count_rows: bool = ..., evolution: _Optional[_Union[Evolution, str]] = ..., rescued_column: _Optional[str] = ..., compression: _Optional[_Union[Compression, str]] = ..., rejects_table: _Optional[str] = ..., file_filter: _Optional[str] = ..., missing_columns: _Optional[_Union[MissingColumns, str]] = ..., sample_bytes: _Optional[int] = ..., call_id: _Optional[str] = ...) -> None: ...

class BatchLimits(_message.Message):
    __slots__ = ("max_rows", "max_bytes")
    MAX_ROWS_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    max_rows: int
    max_bytes: int
    def __init__(self, max_rows: _Optional[int] = ..., max_bytes: _Optional[int] = ...) -> None: ...
