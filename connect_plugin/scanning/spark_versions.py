"""What differs between the pyspark versions the scan's data source runs on (4.0 to 4.3).

Spark's Python workers import the Spark server's own pyspark, whatever
interpreter runs them, so the data source must work with the pyspark of every
supported server:

- ``to_arrow_schema`` takes ``timezone=`` from 4.2 on; 4.0 and 4.1 take
  ``timestamp_utc=True``, which gives the same ``timestamp[us, tz=UTC]``.
- The filter classes of Python data source pushdown exist from 4.1 on. Spark
  4.0 pushes no filters to a Python data source, so there is nothing to
  translate there, and filters on partition columns prune no files: every
  file is opened and Spark filters the rows, with the same result.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

from pyspark.sql.pandas.types import to_arrow_schema

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

SPARK_TIMEZONE = "UTC"
"""The zone Spark's Python data source reader uses to build its expected Arrow schema."""

_TAKES_TIMEZONE = "timezone" in inspect.signature(to_arrow_schema).parameters

FILTER_OPERATORS: dict[type, str] = {}
"""Spark's pushed filter classes and the ``PartitionFilter`` operator of each; empty before 4.1."""

NOT_FILTER: type | None = None
"""Spark's ``Not`` filter class, None before 4.1."""

try:
    from pyspark.sql.datasource import (
        EqualNullSafe,
        EqualTo,
        GreaterThan,
        GreaterThanOrEqual,
        In,
        IsNotNull,
        IsNull,
        LessThan,
        LessThanOrEqual,
        Not,
        StringContains,
        StringEndsWith,
        StringStartsWith,
    )
except ImportError:
    pass
else:
    NOT_FILTER = Not
    FILTER_OPERATORS.update(
        {
            EqualTo: "eq",
            EqualNullSafe: "eq_null_safe",
            GreaterThan: "gt",
            GreaterThanOrEqual: "ge",
            LessThan: "lt",
            LessThanOrEqual: "le",
            In: "in",
            IsNull: "is_null",
            IsNotNull: "is_not_null",
            StringStartsWith: "starts_with",
            StringEndsWith: "ends_with",
            StringContains: "contains",
        }
    )


def spark_arrow_schema_of(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark checks a Python data source's batches against."""
    if _TAKES_TIMEZONE:
        return to_arrow_schema(schema, timezone=SPARK_TIMEZONE)
    return to_arrow_schema(schema, timestamp_utc=True)  # type: ignore[call-arg]
