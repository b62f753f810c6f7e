"""Pieces of the plans and SQL text the gateway writes for Spark to run.

Many modules build what they send upstream (results, views, scans, row
changes, value checks); the literals and identifiers they splice in are
spelled here once, apart from the channel that carries them (``upstream``).
"""

from __future__ import annotations

from pyspark.sql.connect import proto as spark_proto


def literal(value: object) -> spark_proto.Expression:
    """A Spark literal expression for a Python str, bool or int."""
    expression = spark_proto.Expression()
    if isinstance(value, bool):
        expression.literal.boolean = value
    elif isinstance(value, int):
        expression.literal.long = value
    elif isinstance(value, str):
        expression.literal.string = value
    else:
        raise TypeError(f"no Spark literal for {type(value).__name__}")
    return expression


def quote_identifier(name: str) -> str:
    """``name`` as one backticked Spark SQL identifier."""
    return "`" + name.replace("`", "``") + "`"
