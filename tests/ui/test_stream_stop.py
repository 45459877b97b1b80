"""Stopping a stream tells its task's cancellation apart from the caller's own."""

from __future__ import annotations

import asyncio

import pytest

from selfref_tui.ui.stream_stop import stop_stream


class Absorbing:
    """Like Textual's MarkdownStream: ``stop`` cancels the task, which catches it and finishes."""

    def __init__(self) -> None:
        self.finished = False
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            pass
        await asyncio.sleep(0)  # appends what was still pending
        self.finished = True

    async def stop(self) -> None:
        self._task.cancel()
        await self._task


async def test_a_stream_whose_task_never_ran_stops_without_raising():
    stream = Absorbing()  # its task has not had a turn yet
    assert await stop_stream(stream) is False  # not all shown: the caller renders in full
    assert not stream.finished


async def test_a_started_stream_stops_and_reports_everything_shown():
    stream = Absorbing()
    await asyncio.sleep(0)
    assert await stop_stream(stream) is True
    assert stream.finished


async def test_the_callers_own_cancellation_is_passed_on_even_when_the_stream_absorbs_it():
    stream = Absorbing()
    await asyncio.sleep(0)
    caller = asyncio.create_task(stop_stream(stream))
    await asyncio.sleep(0)  # the caller now waits inside stop()
    caller.cancel()  # reaches the stream's task first, which catches it
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert stream.finished
