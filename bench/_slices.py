"""How long the event loop is held at a time: every callback timed, wall clock and CPU.

A key typed into the app waits for whatever callback holds the loop, then for
each hop of its way (app → input → its Changed bubbling up, or → the screen's
next paint). So the figure that decides the echo is the distribution of slice
lengths, not the total: ``stream_bench.py --slices`` prints it for the stream.
CPU per slice (``time.thread_time``) moves far less with the machine's load
than wall time, so both are printed.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from dataclasses import dataclass, field

#: slices at least this long (CPU) are named by what ran in them
NAMED_S = 0.005
#: the buckets of the distribution, in ms
EDGES_MS = (1, 5, 10, 20, 50, 100)


@dataclass
class LoopSlices:
    """Patches ``asyncio.Handle._run`` while ``active``; one instance per process."""

    active: bool = False
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    #: what ran in each slice of ≥ NAMED_S of CPU → its CPU seconds
    named: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    def install(self) -> LoopSlices:
        run = asyncio.events.Handle._run
        slices = self

        def timed(handle: asyncio.events.Handle) -> None:
            if not slices.active:
                return run(handle)
            wall, cpu = time.perf_counter(), time.thread_time()
            run(handle)
            cpu = time.thread_time() - cpu
            slices.wall.append(time.perf_counter() - wall)
            slices.cpu.append(cpu)
            if cpu >= NAMED_S:
                slices.named[_name(handle)].append(cpu)
            return None

        asyncio.events.Handle._run = timed  # type: ignore[method-assign]
        return self

    def lines(self) -> list[str]:
        out = [f"  event-loop slices while streaming: n={len(self.wall)}"]
        for label, values in (("wall", self.wall), ("cpu", self.cpu)):
            if not values:
                continue
            ms = sorted(v * 1000 for v in values)
            buckets = []
            low = 0.0
            for edge in (*EDGES_MS, float("inf")):
                picked = [v for v in ms if low <= v < edge]
                name = f"≥{low:.0f}" if edge == float("inf") else f"{low:.0f}–{edge}"
                buckets.append(f"{name}: {len(picked)} ({sum(picked) / 1000:.2f} s)")
                low = edge
            out.append(
                f"    {label:<4} total {sum(ms) / 1000:5.2f} s  p50 {_at(ms, 0.5):5.2f}"
                f"  p90 {_at(ms, 0.9):5.2f}  p99 {_at(ms, 0.99):6.2f}  max {ms[-1]:6.1f} ms"
            )
            out.append("      ms " + "  ".join(buckets))
        top = sorted(self.named.items(), key=lambda kv: -sum(kv[1]))[:6]
        for name, values in top:
            out.append(
                f"    ≥{NAMED_S * 1000:.0f} ms cpu: {name:<58} n={len(values):4d}"
                f"  {sum(values):5.2f} s  max {max(values) * 1000:5.1f} ms"
            )
        return out


def _at(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _name(handle: asyncio.events.Handle) -> str:
    """The task's coroutine and, for a timer or a message pump, whose it is."""
    callback = handle._callback  # type: ignore[attr-defined]
    task = getattr(callback, "__self__", None)
    if not isinstance(task, asyncio.Task):
        return getattr(callback, "__qualname__", repr(callback))
    coro = task.get_coro()
    name = getattr(coro, "__qualname__", str(coro))
    frame = getattr(coro, "cr_frame", None)
    owner = frame.f_locals.get("self") if frame is not None else None
    if owner is not None:
        target = getattr(owner, "_callback", None)
        name += f" {type(owner).__name__}"
        if target is not None:
            name += f" {getattr(target, '__qualname__', '')}"
    return name
