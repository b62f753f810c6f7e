"""The stock pyspark client sees the same Spark directly and through the gateway.

Each case runs on a fresh session straight against the test session's
Spark Connect server and through the gateway in front of it, in the same
run: same value, or the same exception class, condition and SQL state. The
direct run is also held to Spark's documented behaviour, so a case that
went wrong on both sides alike cannot pass.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.integration.transparency.cases import CASES, Case, Outcome, outcome_of

ENDPOINTS = ("direct", "gateway")


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_same_outcome_directly_and_through_the_gateway(
    case: Case, endpoint: str, outcome: Callable[[Case, str], Outcome]
) -> None:
    seen = outcome(case, endpoint)
    print(f"{case.name} {endpoint}: {seen}")
    assert seen == case.expected
    assert seen == outcome(case, "direct")


FAILING_QUERIES = {
    "syntax": "SELEC 1",
    "analysis": "SELECT * FROM transparency_no_such_table",
    "type": "SELECT 'a' + map(1, 2)",
}


@pytest.mark.parametrize("query", FAILING_QUERIES.values(), ids=FAILING_QUERIES.keys())
def test_a_temp_table_over_a_failing_query_fails_as_the_query_does(
    query: str, addresses: dict[str, str]
) -> None:
    plain = outcome_of(lambda spark: spark.sql(query).collect(), addresses["direct"])
    cttas = outcome_of(
        lambda spark: spark.sql(f"CREATE TEMPORARY TABLE broken AS {query}").collect(),
        addresses["gateway"],
    )
    assert plain.exception is not None
    assert (cttas.exception, cttas.condition, cttas.sql_state) == (
        plain.exception,
        plain.condition,
        plain.sql_state,
    )
