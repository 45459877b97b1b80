"""Shared helpers for the runtime tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


async def wait_until(predicate: Callable[[], bool], timeout: float = 5.0, what: str = "") -> None:
    """Poll ``predicate`` on the event loop instead of sleeping a fixed time."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        await asyncio.sleep(0.005)
