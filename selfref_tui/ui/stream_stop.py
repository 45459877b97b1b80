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

    A cancellation aimed at the caller's own task is passed on unchanged.
    """
    try:
        await stream.stop()
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
        return False
    return True
