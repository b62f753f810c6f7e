"""The undo of a CTTAS runs to its end even when the client cancels while it runs."""

from __future__ import annotations

import asyncio

import pytest

from connect_plugin.server.temp_tables import _to_the_end


def test_undo_finishes_although_the_caller_is_cancelled_twice() -> None:
    steps: list[str] = []

    async def undo() -> None:
        steps.append("interrupting")
        await asyncio.sleep(0.05)
        steps.append("deleted")

    async def create() -> None:
        try:
            raise RuntimeError("the write failed")
        except RuntimeError:
            await _to_the_end(undo())
            raise

    async def main() -> None:
        task = asyncio.ensure_future(create())
        await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert steps == ["interrupting", "deleted"]


def test_undo_errors_reach_the_caller() -> None:
    async def failing() -> None:
        raise ValueError("undo broke")

    with pytest.raises(ValueError, match="undo broke"):
        asyncio.run(_to_the_end(failing()))
