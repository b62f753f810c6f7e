"""What differs between the pyspark versions the scan's data source runs on (4.0 to 4.3).

Spark's Python workers import the Spark server's own pyspark, whatever
interpreter runs them, so the data source must work with the pyspark of every
supported server:

- ``to_arrow_schema`` takes ``timezone=`` from 4.2 on; 4.0 and 4.1 take
  ``timestamp_utc=True``, which gives the same ``timestamp[us, tz=UTC]``.
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


def spark_arrow_schema_of(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark checks a Python data source's batches against."""
    if _TAKES_TIMEZONE:
        return to_arrow_schema(schema, timezone=SPARK_TIMEZONE)
    return to_arrow_schema(schema, timestamp_utc=True)  # type: ignore[call-arg]
