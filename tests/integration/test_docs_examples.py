"""The code blocks of README.md and docs/ that need Spark, run as a reader runs them.

A page's blocks run in order in one namespace, as a reader pastes them into
one session: ``spark`` is a session through the test gateway, the reader's
address and data paths are the test's (tests/docs_blocks.py). A comment that
says what an expression gives (``df.count()  # 4``) is checked. A block that
makes its own session is left to stop it, or it is stopped after the block.
Blocks that are pytest tests run as a project's tests, with the pytest
plugin; the README's first command, ``./dev demo``, runs as written.
"""

from __future__ import annotations

import ast
import contextlib
import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest
from pyspark.sql.connect.session import SparkSession

from connect_plugin.server.gateway import Gateway
from tests.docs_blocks import CHECKOUT, PAGES, README, Block, blocks, example_data, localized
from tests.integration.installs.venvs import clean_env

SPARK_BLOCKS = [b for b in blocks() if b.lang == "python" and b.uses_spark() and not b.is_pytest_module()]
TEST_BLOCKS = [b for b in blocks() if b.lang == "python" and b.is_pytest_module()]
DEMO_TIMEOUT_S = 600


def _claims(code: str) -> dict[int, str]:
    """Line -> the value a comment on it says the line's expression gives (``# 4``,
    ``# 1: why``, ``# declared, empty: Row(table='d', rows_written=0)``)."""
    claims = {}
    for token in tokenize.generate_tokens(io.StringIO(code).readline):
        if token.type != tokenize.COMMENT:
            continue
        text = token.string.lstrip("#")
        row = re.search(r"Row\(.*\)\s*$", text)
        number = re.match(r"\s*(-?\d+)(?=:|\s*$)", text)
        if row:
            claims[token.start[0]] = row.group(0).strip()
        elif number:
            claims[token.start[0]] = number.group(1)
    return claims


def _run(block: Block, code: str, namespace: dict[str, object]) -> None:
    """Statement by statement; an expression whose comment claims its value must give it."""
    claims = _claims(code)
    for statement in ast.parse(code, block.name).body:
        claim = claims.get(statement.end_lineno or statement.lineno)
        if isinstance(statement, ast.Expr) and claim is not None and not _is_print(statement):
            value = eval(compile(ast.Expression(statement.value), block.name, "eval"), namespace)
            assert repr(value) == claim, f"{block.name}, line {statement.lineno}: {value!r}, not {claim}"
        else:
            exec(compile(ast.Module([statement], []), block.name, "exec"), namespace)


def _is_print(statement: ast.Expr) -> bool:
    call = statement.value
    return isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "print"


def _run_page(blocks_of_page: list[Block], spark: SparkSession, gateway: Gateway, root: Path) -> str:
    """Run the blocks in order; what they printed."""
    namespace: dict[str, object] = {"spark": spark}
    printed = io.StringIO()
    for block in blocks_of_page:
        try:
            with contextlib.redirect_stdout(printed):
                _run(block, localized(block, root, gateway.address), namespace)
        finally:
            own = namespace.get("spark")
            if isinstance(own, SparkSession) and own is not spark and not own.is_stopped:
                own.stop()
            namespace["spark"] = spark
    return printed.getvalue()


@pytest.mark.parametrize(
    "page",
    sorted({b.page for b in SPARK_BLOCKS}),
    ids=lambda p: str(p.relative_to(CHECKOUT)),
)
def test_the_python_blocks_of_a_page_run_through_the_gateway(
    page: Path, spark: SparkSession, gateway: Gateway, tmp_path: Path
) -> None:
    example_data(tmp_path)
    printed = _run_page([b for b in SPARK_BLOCKS if b.page == page], spark, gateway, tmp_path)
    if page == README:
        lines = printed.splitlines()
        assert "30" in lines, printed
        assert "Row(id=1, ms=12.0, host=None, filename='events.json')" in printed, printed
    if page.name == "scans.md":
        schema = re.findall(r"^ \|-- (\w+): (\w+)", printed, re.M)
        assert schema[:6] == [
            ("id", "long"), ("level", "string"), ("ms", "double"), ("host", "string"),
            ("dir0", "string"), ("dir1", "string"),
        ], printed


def test_the_test_examples_pass_with_the_pytest_plugin(gateway: Gateway, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
    for number, block in enumerate(TEST_BLOCKS):
        (project / "tests" / f"test_doc_{number}.py").write_text(block.text)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        capture_output=True, text=True, timeout=300, cwd=project,
        env=clean_env({"SPARK_REMOTE": gateway.address}), check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert f"{len(TEST_BLOCKS)} passed" in done.stdout


def test_the_readme_demo_command_runs(tmp_path: Path) -> None:
    (command,) = [line for b in blocks([README]) for line in b.text.splitlines() if "demo" in line]
    assert command.split("#")[0].split() == ["./dev", "demo"]
    done = subprocess.run(
        ["./dev", "demo"], capture_output=True, text=True, timeout=DEMO_TIMEOUT_S, cwd=CHECKOUT,
        env=clean_env({
            "CONNECT_PLUGIN_STATE_DIR": str(tmp_path / "state"),
            "CONNECT_PLUGIN_WORKSPACE": str(tmp_path / "workspace"),
        }),
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "[demo] CREATE TEMPORARY TABLE squares ...: 1000 rows written" in done.stdout
    assert "[demo] stopped everything after" in done.stdout
    others = [line for line in done.stdout.splitlines() if not line.startswith("[demo] ")]
    assert (others, done.stderr) == ([], ""), "the demo prints only its own lines"


def test_every_page_with_python_is_run_here_or_in_the_unit_suite() -> None:
    docs = CHECKOUT / "docs"
    assert {b.page for b in SPARK_BLOCKS} == {
        README, *(docs / f"{name}.md" for name in ("compatibility", "operations", "scans", "temp-tables"))
    }
    assert {b.page for b in TEST_BLOCKS} == {docs / "testing.md"}
    assert {b.page for b in SPARK_BLOCKS} | {b.page for b in TEST_BLOCKS} <= set(PAGES)
