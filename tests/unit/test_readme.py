"""The README and docs/ hold together: their links lead somewhere, and every code block runs
or is checked (tests/docs_blocks.py says how; the blocks that need Spark run in
tests/integration/test_docs_examples.py)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.docs_blocks import CHECKOUT, DOCS_ADDRESS, README, Block, blocks, example_data, localized

DOCS = sorted((CHECKOUT / "docs").glob("*.md"))
LINKED_FROM = [README, *DOCS, CHECKOUT / "docker" / "README.md"]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(markdown: str) -> set[str]:
    """GitHub's anchor of each heading: lower case, punctuation dropped, spaces as dashes."""
    headings = re.findall(r"^#{1,6} (.+)$", markdown, re.M)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


@pytest.mark.parametrize("page", LINKED_FROM, ids=lambda p: str(p.relative_to(CHECKOUT)))
def test_every_relative_link_reaches_a_file_and_heading(page: Path) -> None:
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.is_file(), f"{page.name} links to {target}, which is not a file"
        if anchor:
            assert anchor in _anchors(linked.read_text()), f"{page.name}: no heading for {target}"


def test_the_readme_links_every_page_of_docs() -> None:
    linked = {(README.parent / t.partition("#")[0]).resolve() for t in LINK.findall(README.read_text())}
    assert set(DOCS) <= linked


def test_loader_example_in_the_docs_runs() -> None:
    scans = CHECKOUT / "docs" / "scans.md"
    blocks = re.findall(r"```python\n(.*?)```", scans.read_text(), re.S)
    example = next(block for block in blocks if "ResultSetLoader" in block)
    namespace: dict[str, object] = {}
    exec(compile(example, str(scans), "exec"), namespace)
    batches = namespace["batches"]
    assert [batch.to_pylist() for batch in batches] == [  # type: ignore[attr-defined]
        [
            {"id": 1, "name": "a", "tags": None},
            {"id": 2, "name": None, "tags": ["x", "y"]},
        ]
    ]


BLOCKS = blocks()
RUN = {"python", "yaml", "json", "toml"}
"""Languages whose blocks run (python) or are read and compared (yaml, json, toml) in the
suite."""
SHOWN = {"bash", "sh", "sql", "text"}
"""Languages whose blocks say why they cannot run and are checked statically."""


def _ids(block: Block) -> str:
    return block.name


def test_every_block_runs_or_says_why_not() -> None:
    assert len(BLOCKS) > 20
    for block in BLOCKS:
        assert block.lang in RUN | SHOWN, f"{block.name}: give the block a language"
        if block.lang in RUN:
            assert block.not_run is None, f"{block.name}: a {block.lang} block runs"
        else:
            assert block.not_run, f"{block.name}: say why it cannot run, <!-- not run: ... -->"


def test_every_python_block_has_a_runner() -> None:
    python = [b for b in BLOCKS if b.lang == "python"]
    pages = {b.page for b in python if b.uses_spark()}
    assert {README, CHECKOUT / "docs" / "scans.md", CHECKOUT / "docs" / "temp-tables.md"} <= pages
    assert [b for b in python if b.is_pytest_module()], "docs/testing.md shows tests to run"


@pytest.mark.parametrize(
    "block", [b for b in BLOCKS if b.lang == "python" and not b.uses_spark()], ids=_ids
)
def test_python_blocks_without_spark_run(block: Block, tmp_path: Path) -> None:
    example_data(tmp_path)
    code = localized(block, tmp_path, "sc://unused")
    exec(compile(code, block.name, "exec"), {})


def test_the_prometheus_example_scrapes_the_port_the_compose_files_serve() -> None:
    (block,) = [b for b in BLOCKS if b.lang == "yaml"]
    (job,) = yaml.safe_load(block.text)["scrape_configs"]
    (target,) = job["static_configs"][0]["targets"]
    for compose in ("compose.yaml", "compose.local.yaml"):
        services = yaml.safe_load((CHECKOUT / "docker" / compose).read_text())["services"]
        ports = {
            str(s["environment"].get("CONNECT_PLUGIN_METRICS_PORT"))
            for s in services.values() if "CONNECT_PLUGIN_METRICS_PORT" in s.get("environment", {})
        }
        assert ports == {target.rsplit(":", 1)[1]}, compose


def test_the_settings_file_of_static_engines_loads(tmp_path: Path) -> None:
    from connect_plugin.config import CONF_FILE_NAME, load_config

    (block,) = [b for b in BLOCKS if b.lang == "toml" and "engines = [" in b.text]
    (tmp_path / CONF_FILE_NAME).write_text(block.text)
    config = load_config({"conf_dir": tmp_path}, {})
    assert config.share_level == "group"
    assert set(config.static_engines) == {"analysts", "ops"}


def test_the_settings_file_of_engine_os_users_loads(tmp_path: Path) -> None:
    from connect_plugin.config import CONF_FILE_NAME, load_config

    (block,) = [b for b in BLOCKS if b.lang == "toml" and "engine_os_users" in b.text]
    (tmp_path / CONF_FILE_NAME).write_text(block.text)
    config = load_config({"conf_dir": tmp_path}, {})
    assert config.local
    assert config.share_level == "user"
    assert config.os_users_of_engines == {"alice": "spark-alice", "bob": "spark-bob"}


def test_the_audit_line_has_the_fields_the_gateway_writes(tmp_path: Path) -> None:
    from connect_plugin.server.monitoring.audit import AuditLog

    (block,) = [b for b in BLOCKS if b.lang == "json"]
    shown = json.loads(block.text)
    log = AuditLog(str(tmp_path / "audit.log"))
    try:
        log.record(method="ExecutePlan", kind="CreateTempTable", outcome="ok", user="alice",
                   session="s", table="kept")
    finally:
        log.close()
    written = json.loads((tmp_path / "audit.log").read_text())
    assert list(shown) == list(written)
    assert {k: shown[k] for k in ("user", "method", "kind", "table", "outcome", "error_class")} == {
        k: written[k] for k in ("user", "method", "kind", "table", "outcome", "error_class")
    }


def test_the_ready_line_is_the_one_serve_prints() -> None:
    from connect_plugin.cli import READY_LINE

    (block,) = [b for b in BLOCKS if b.lang == "text" and "ready at" in b.text]
    assert block.text == READY_LINE.format(address=DOCS_ADDRESS) + "\n"


def _commands(script: str) -> list[list[str]]:
    """Each command line of a shell block (continuations joined), split as the shell would,
    without the variable assignments in front of it."""
    joined = re.sub(r"\\\n", " ", script)
    commands = []
    pending = ""
    for line in joined.splitlines():
        pending += line + "\n"
        try:
            words = shlex.split(pending, comments=True)
        except ValueError:
            continue
        pending = ""
        while words and re.match(r"^[A-Z_]+=", words[0]):
            words.pop(0)
        if words:
            commands.append(words)
    return commands


def _dev_commands() -> set[str]:
    return set(re.findall(r"^  (\w+)\)$", (CHECKOUT / "dev").read_text(), re.M))


def _cli_options(command: str) -> str:
    cli = Path(sys.executable).parent / "connect-plugin"
    return subprocess.run(
        [str(cli), command, "--help"], capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.lang in ("bash", "sh")], ids=_ids)
def test_shell_blocks_parse_and_name_commands_and_options_that_exist(block: Block) -> None:
    script = re.sub(r"<[a-z ]+>", "PLACEHOLDER", block.text)
    parsed = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
    assert parsed.returncode == 0, f"{block.name}: {parsed.stderr}"
    for words in _commands(script):
        if words[0] == "./dev":
            assert words[1] in _dev_commands(), f"{block.name}: ./dev has no {words[1]}"
        elif words[0] == "connect-plugin":
            options = _cli_options(words[1])
            for word in words[2:]:
                if word.startswith("--"):
                    assert word.split("=")[0] in options, f"{block.name}: {words[1]} has no {word}"


def _error_table() -> dict[str, tuple[str, str, str]]:
    """The docs' table of error classes: class -> (exception, SQL state, gRPC code)."""
    text = (CHECKOUT / "docs" / "compatibility.md").read_text()
    start = text.index("| error class | exception (JVM class) |")
    rows: dict[str, tuple[str, str, str]] = {}
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip().strip("`") for cell in line.strip("|").split("|")]
        rows[cells[0]] = (cells[1], cells[2], cells[3])
    return rows


def test_the_docs_list_every_error_class_the_gateway_emits() -> None:
    from connect_plugin.server.transport.status import emitted

    in_code = {
        e.error_class: (e.exception.rsplit(".", 1)[-1], e.sql_state, e.code.name)
        for e in emitted()
    }
    assert _error_table() == in_code


def _table(page: Path, header: str) -> list[list[str]]:
    """The cells of each row of the markdown table whose header row starts with ``header``."""
    lines = page.read_text().splitlines()
    start = next(number for number, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    return rows


def _names(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def test_the_tables_of_scan_options_list_the_options_of_the_model() -> None:
    """docs/scans.md's two tables of options, the README's way to them, hold every option of
    ``ScanOptions`` (connect_plugin/scanning/request/options.py) with the values it takes, in its order,
    and every reader and object-store option there is."""
    from connect_plugin.scanning.files.storage import S3_OPTIONS
    from connect_plugin.scanning.formats import FORMAT_CLASSES
    from connect_plugin.scanning.request.options import SCAN_OPTIONS

    scans = CHECKOUT / "docs" / "scans.md"
    reader_options = set(S3_OPTIONS).union(*(cls.option_names for cls in FORMAT_CLASSES.values()))
    library = _table(scans, "| option | values |")
    own = [row for row in library if not row[0].startswith("`options`:")]
    assert [_names(row[0]) for row in own] == [[option.name] for option in SCAN_OPTIONS]
    for row, option in zip(own, SCAN_OPTIONS, strict=True):
        assert row[1] == option.values, f"docs/scans.md: the values of {option.name}"
    named = {name.lower() for row in library if row not in own for name in _names(row[0])[1:]}
    assert named == reader_options

    sql = _table(scans, "| SQL option | `scan()` argument |")
    own = [row for row in sql if row[1] != "`options={...}`"]
    arguments = [name for row in own for name in _names(row[1])]
    assert arguments == [option.name for option in SCAN_OPTIONS]
    by_name = {option.name: option for option in SCAN_OPTIONS}
    for row in own:
        (first, *more) = _names(row[1])
        words = by_name[first].kind.words()
        if words is not None and not more:
            assert row[2] == words, f"docs/scans.md: the SQL values of {first}"
    named = {name.lower() for row in sql if row not in own for name in _names(row[0])}
    assert named == reader_options
