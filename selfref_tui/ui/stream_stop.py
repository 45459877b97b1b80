"""Stopping a Textual ``MarkdownStream`` without inheriting its task's cancellation.

``MarkdownStream.stop()`` cancels the stream's task and awaits it. When that
task had not run its first step yet (the stream was opened, and stopped, in
the same pass of the event loop), the coroutine never gets to catch the
cancellation, so awaiting it raises ``CancelledError`` in the *caller*. For
the transcript that caller is the task that shows every runtime event: it
died, and the events behind it (the end of the turn) were never shown.
"""

from __future__ import annotations

import asyncio
from typing import Any


async def stop_stream(stream: Any) -> bool:
    """Stop ``stream``; False when its text may not all be on screen (render it in full).

    A cancellation aimed at the caller's own task is passed on, even one the
    stream's task absorbed on its way (``Task.cancel`` reaches the awaited task
    first, and ``MarkdownStream`` catches it): the caller's ``cancelling()``
    count going up is what tells the two apart.
    """
    task = asyncio.current_task()
    before = task.cancelling() if task is not None else 0
    try:
        await stream.stop()
    except asyncio.CancelledError:
        if cancelled_since(task, before):
            raise
        return False
    if cancelled_since(task, before):
        raise asyncio.CancelledError
    return True


def cancelled_since(task: asyncio.Task[Any] | None, before: int) -> bool:
    """Whether someone asked ``task`` to cancel after it counted ``before`` requests."""
    return task is not None and task.cancelling() > before
