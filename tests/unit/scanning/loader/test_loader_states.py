"""The loader's batch states, named as in Drill's ResultSetLoaderImpl, and their transitions."""

from __future__ import annotations

import pyarrow as pa
import pytest

from connect_plugin.errors import BatchFull, LoaderStateError
from connect_plugin.scanning import LoaderState, ResultSetLoader

S = LoaderState


def write(loader: ResultSetLoader, *values: object) -> None:
    writer = loader.writer
    for value in values:
        writer.start_row()
        writer.column(0).set(value)
        writer.save_row()


def test_a_batch_moves_from_start_to_active_to_full_to_harvested() -> None:
    loader = ResultSetLoader(pa.schema([("a", pa.int64())]), max_rows=2)
    assert loader.state is S.START
    loader.start_batch()
    assert loader.state is S.ACTIVE
    write(loader, 1)
    assert loader.state is S.ACTIVE
    write(loader, 2)
    assert loader.state is S.FULL_BATCH
    with pytest.raises(BatchFull):
        loader.writer.start_row()
    assert loader.harvest().num_rows == 2
    assert loader.state is S.HARVESTED
    loader.start_batch()
    assert loader.state is S.ACTIVE


def test_an_overflowing_row_goes_overflow_then_look_ahead_then_opens_the_next_batch() -> None:
    loader = ResultSetLoader(pa.schema([("s", pa.string())]), max_bytes=200)
    loader.start_batch()
    writer = loader.writer
    write(loader, "x" * 60, "y" * 60)
    writer.start_row()
    writer.column(0).set("z" * 90)
    assert loader.state is S.OVERFLOW
    writer.save_row()
    assert loader.state is S.OVERFLOW
    assert loader.harvest().column(0).to_pylist() == ["x" * 60, "y" * 60]
    assert loader.state is S.LOOK_AHEAD
    assert loader.has_lookahead
    loader.start_batch()
    assert loader.state is S.ACTIVE
    assert loader.harvest().column(0).to_pylist() == ["z" * 90]
    assert loader.state is S.HARVESTED


def test_a_waiting_row_that_fills_the_next_batch_makes_it_full_at_once() -> None:
    loader = ResultSetLoader(pa.schema([("s", pa.string())]), max_rows=1, max_bytes=200)
    loader.start_batch()
    writer = loader.writer
    writer.write_rows([("a" * 100,), ("b" * 150,)])
    assert loader.state is S.FULL_BATCH
    loader.harvest()
    assert loader.state is S.HARVESTED


def test_close_is_final_from_any_state() -> None:
    for steps in (0, 1, 2):
        loader = ResultSetLoader(pa.schema([("a", pa.int64())]))
        if steps:
            loader.start_batch()
        if steps == 2:
            write(loader, 1)
            loader.harvest()
        loader.close()
        assert loader.state is S.CLOSED
        with pytest.raises(LoaderStateError, match="closed"):
            loader.start_batch()
        with pytest.raises(LoaderStateError, match="closed"):
            loader.harvest()
        loader.close()
        assert loader.state is S.CLOSED


def test_start_and_harvest_are_refused_out_of_turn() -> None:
    loader = ResultSetLoader(pa.schema([("a", pa.int64())]))
    with pytest.raises(LoaderStateError, match="start_batch"):
        loader.harvest()
    loader.start_batch()
    with pytest.raises(LoaderStateError, match="in progress"):
        loader.start_batch()
    assert loader.state is S.ACTIVE
