"""The app at the scale of a person who lives in it: prints figures, asserts nothing.

    .venv/bin/python bench/scale_use_bench.py [--keep DIR] [--only NAME,...]

A data folder is built with the store's own writer (``SelfReference.commit``, as
``bench/conversation_bench.py`` builds its stores): one conversation of 20,000
messages (tool calls, refs, images, 10 compactions, 30 pins, 50 rewinds), 499
short ones beside it (500 in all), 1,000 experiences and 2,000 refs in the big one.
The real app (``App.run_test``, 120x40) opens the big one, and each interaction is
timed from its key to the app idle again and its next frame drawn: CPU seconds of
this process (what a shared machine inflates least; every thread counted) and wall
seconds. Goals: ≤ 0.1 s of CPU at rest; ≤ 1 s for what loads a lot (the open, a
rewind of 10,000 messages and its undo, /save). ``--keep DIR`` builds into DIR
(kept, built once: a later run with the same DIR reuses it).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from conversation_bench import FILLER, summary  # noqa: E402

from bench._common import ServerProcess  # noqa: E402
from selfref_tui.context.mutations import (  # noqa: E402
    AssistantMessageMutation,
    ExperienceRememberMutation,
    ToolResultMutation,
    UserMessageMutation,
)
from selfref_tui.selfref import SelfReference  # noqa: E402

SIZE = (120, 40)
BIG = "big"
MESSAGES = 20_000
KEYS = 500
EXPERIENCES = 1_000
REFS = 2_000
PINS = 30
REWINDS = 50
IMAGES = 20
#: a 1x1 PNG
PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201a5d6c2"
    "e90000000049454e44ae426082")).decode()


def turn(i: int, refs: list[int]) -> list:
    """A user message and an answer; every tenth turn a tool call; a ref in every fourth
    answer while there are fewer than :data:`REFS`; an image now and then."""
    text = f"question {i}: {FILLER}"
    if i % 450 == 7 and i // 450 < IMAGES:
        message: dict[str, Any] = {"role": "user", "content": [
            {"type": "text", "text": text},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}]}
    else:
        message = {"role": "user", "content": text}
    out: list = [UserMessageMutation(message)]
    if i % 10 == 0:
        call = {"id": f"c{i}", "type": "function",
                "function": {"name": "read_file", "arguments": f'{{"path": "f{i}.txt"}}'}}
        out += [AssistantMessageMutation(content="", tool_calls=[call]),
                ToolResultMutation(f"c{i}", f"contents of f{i}.txt: {FILLER}")]
    answer = f"answer {i}: {FILLER}"
    if i % 4 == 0 and refs[0] < REFS:
        refs[0] += 1
        answer += f'\n\n<ref id="r{i}">\n```python\nx = {i}\n```\n</ref>'
    out.append(AssistantMessageMutation(content=answer))
    return out


def build(data: Path) -> None:
    """The data folder (see the module's docstring)."""
    with SelfReference(data) as store:
        memory = store.open(BIG)
        memory.commit([ExperienceRememberMutation(f"experience {k}: {FILLER[:60]}",
                                                  source="person")
                       for k in range(EXPERIENCES)])
        refs = [0]
        batch: list = []
        records: list[dict] = []  # the refs' records, as the runtime writes them with answers
        count = i = rewinds = 0
        while count < MESSAGES:
            defined = refs[0]
            mutations = turn(i, refs)
            if refs[0] > defined:
                records.append({"t": "ref", "id": f"r{i}", "content": f"```python\nx = {i}\n```"})
            batch += mutations
            count += len(mutations)
            i += 1
            if len(batch) >= 400:
                memory.commit(batch, records=records)
                batch, records = [], []
                if rewinds < REWINDS and i % 8 == 0:
                    # take the last answer back, as /rewind does (its messages stay, rewound)
                    last = memory.last_number
                    memory.commit([memory.rewind_patch(last)])
                    rewinds += 1
                if count // 2000 != (count - 400) // 2000 and count < MESSAGES - 1000:
                    memory.commit(summary(i))
        if batch:
            memory.commit(batch, records=records)
        last = memory.last_number
        for k in range(PINS):
            memory.set_pinned(last - 10 - k * 37)
        store.release(BIG)
        for k in range(KEYS - 1):
            other = store.open(f"c-{k:03d}")
            other.commit([turn(k, [REFS])[0], AssistantMessageMutation(
                content=f"answer for conversation {k}: {FILLER}")])
            store.release(f"c-{k:03d}")


class Timer:
    """Times an interaction from its key to the app idle and its next frame drawn."""

    def __init__(self, app: Any, pilot: Any) -> None:
        self.app, self.pilot = app, pilot
        self.rows: list[tuple[str, float, float, str]] = []

    async def settled(self) -> None:
        """Idle: no message waiting, no thread started for this running, a frame drawn.

        (A worker on the event loop may be waiting for a screen to close: not work.)
        """
        app, pilot = self.app, self.pilot
        deadline = time.perf_counter() + 60
        await pilot.pause()
        while any(w.is_running and w not in self._before and w._thread_worker
                  for w in app.workers):
            if time.perf_counter() > deadline:
                break
            await pilot.pause(0.01)
        transcript = getattr(app, "transcript", None)
        if transcript is not None and hasattr(transcript, "settle"):
            await transcript.settle()
        drawn = asyncio.Event()
        app.screen.call_after_refresh(drawn.set)
        await drawn.wait()

    async def time(self, label: str, act: Callable[[], Awaitable[object]],
                   note: str = "") -> tuple[float, float]:
        self._before = set(self.app.workers)
        w0, c0 = time.perf_counter(), time.process_time()
        try:
            await act()
            await self.settled()
        except Exception as error:  # a figure that cannot be taken says why, the rest go on
            self.rows.append((label, float("nan"), float("nan"), f"failed: {error!r}"[:80]))
            return float("nan"), float("nan")
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        self.rows.append((label, cpu, wall, note))
        print(f"  {label:<52} CPU {cpu:7.3f} s  wall {wall:7.3f} s  {note}", flush=True)
        return cpu, wall


async def typed(pilot: Any, text: str) -> None:
    await pilot.press(*[{" ": "space", "/": "slash"}.get(c, c) for c in text])


async def command(pilot: Any, text: str) -> None:
    """A slash command typed (not timed), sent by the Enter that is timed."""
    await typed(pilot, text)


def bench_app(url: str, data: Path) -> Any:
    """The real app on the big conversation of ``data``, its model the bench server at ``url``."""
    from selfref_tui.config import AppConfig, ProviderConfig
    from selfref_tui.ui.app import SelfRefApp

    provider = ProviderConfig(base_url=url, api_key="bench", model="bench", max_retries=0,
                              timeout_s=60)
    return SelfRefApp(AppConfig(provider=provider, data_dir=data, key=BIG))


async def opened(app: Any, pilot: Any) -> Timer:
    """The timer of ``app`` once its conversation is open, the app ready and idle."""
    timer = Timer(app, pilot)
    timer._before = set()
    while not (app.ready and app.header.status == "ready"):
        await pilot.pause(0.01)
    await timer.settled()
    return timer


async def quit_after_open(data: Path) -> tuple[str, float, float, str]:
    """ctrl+q as soon as the big conversation is drawn, while what the open started
    (the meter's first exact count of 20,000 messages, in a thread) still runs."""
    label = "quit right after the open (to the app closed)"
    with ServerProcess("ok", None) as server:
        app = bench_app(server.url, data)
        async with app.run_test(size=SIZE) as pilot:
            while not (app.ready and app.header.status == "ready"):
                await pilot.pause(0.01)
            await pilot.pause()
            w0, c0 = time.perf_counter(), time.process_time()
            with contextlib.suppress(Exception):  # the app may be gone before the pilot looks
                await pilot.press("ctrl+q")
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    print(f"  {label:<52} CPU {cpu:7.3f} s  wall {wall:7.3f} s", flush=True)
    return label, cpu, wall, ""


async def run(data: Path, only: set[str]) -> list[tuple[str, float, float, str]]:
    with SelfReference(data) as store:
        last = store.open(BIG, write=False).last_number
    with ServerProcess("ok", None) as server:
        app = bench_app(server.url, data)
        w0, c0 = time.perf_counter(), time.process_time()
        async with app.run_test(size=SIZE) as pilot:
            timer = await opened(app, pilot)
            cpu, wall = time.process_time() - c0, time.perf_counter() - w0
            listed = (f"sidebar: {len(app.sidebar.experience_list.rows or ())} experiences, "
                      f"{len(app.sidebar.ref_list.rows or ())} refs")
            timer.rows.append(("open the big conversation (to its end drawn)", cpu, wall, listed))
            print(f"  {'open the big conversation (to its end drawn)':<52} CPU {cpu:7.3f} s  "
                  f"wall {wall:7.3f} s  {listed}", flush=True)
            deadline = time.perf_counter() + 30
            while not app.agent.tokens.ready and time.perf_counter() < deadline:
                await pilot.pause(0.05)
            # and the meter's exact count of it all (seconds of a thread, which the figures
            # below would take for theirs)
            deadline = time.perf_counter() + 120
            while time.perf_counter() < deadline and any(
                    w.group == "usage" and not w.is_finished for w in app.workers):
                await pilot.pause(0.05)
            await pilot.pause(1.5)  # the collector's pass after loading (gc_pauses)

            async def keys(*names: str) -> None:
                await pilot.press(*names)

            def want(name: str) -> bool:
                return not only or name in only

            if want("switcher"):
                await timer.time("ctrl+o: the switcher (500 conversations)",
                                 lambda: keys("ctrl+o"))
                await timer.time("  typing a filter (one key: 4)", lambda: keys("4"))
                await timer.time("  ctrl+f: content filter", lambda: keys("ctrl+f"))
                await timer.time("  typing in it (one key: 2)", lambda: keys("2"))
                await timer.time("  escape", lambda: keys("escape"))
                if app.screen is not app.screen_stack[0]:
                    await keys("escape")
            if want("steps"):
                async def steps() -> None:
                    for _ in range(100):
                        await pilot.press("ctrl+up")

                cpu, _ = await timer.time("ctrl+up ×100 (all of them)", steps)
                print(f"  {'':<52} per step {cpu / 100 * 1000:.1f} ms of CPU")
                await keys("escape")
            if want("pageup"):
                async def pages() -> None:
                    for _ in range(50):
                        await pilot.press("pageup")

                cpu, _ = await timer.time("Page Up ×50 (all of them)", pages)
                print(f"  {'':<52} per page {cpu / 50 * 1000:.1f} ms of CPU")
                await keys("end")
                await timer.settled()
            if want("context"):
                tokens = app.agent.tokens
                misses = tokens.misses
                await command(pilot, "/context")
                await timer.time("/context (the preview) the first time", lambda: keys("enter"),
                                 f"{tokens.misses - misses:,} messages encoded for it")
                await keys("escape")
                await timer.settled()
                await command(pilot, "/context")
                await timer.time("/context again", lambda: keys("enter"))
                await keys("end")
                await timer.time("  end (the next messages mounted)", lambda: keys("end"))
                await keys("escape")
                await timer.settled()
            if want("find"):
                await timer.time("ctrl+f: the find bar", lambda: keys("ctrl+f"))
                await typed(pilot, "question 300")
                await timer.time("  a match ~15,000 messages back (enter)", lambda: keys("enter"))
                await keys("escape")
                await timer.settled()
            if want("rewind"):
                await command(pilot, "/rewind")
                await timer.time("/rewind: the picker", lambda: keys("enter"))
                await keys("escape")
                await timer.settled()
                await command(pilot, f"/rewind {last - 10_000}")
                await timer.time("/rewind 10000 (10,000 messages back)", lambda: keys("enter"))
                await command(pilot, "/rewind undo")
                await timer.time("/rewind undo", lambda: keys("enter"))
            if want("save"):
                out = data.parent / "saved.md"
                await command(pilot, f"/save {out}")
                await timer.time("/save of the whole conversation", lambda: keys("enter"))
            if want("paste"):
                from textual import events

                pasted = "\n".join(f"line {k}: some pasted log output, words and numbers {k}"
                                   for k in range(3000))

                async def paste_and_send() -> None:
                    app.query_one("#input").post_message(events.Paste(pasted))
                    await pilot.pause()
                    await pilot.press("enter")

                await timer.time("send a 3,000-line paste (with its short answer)",
                                 paste_and_send)
            w0, c0 = time.perf_counter(), time.process_time()
            with contextlib.suppress(Exception):  # the app may be gone before the pilot looks
                await pilot.press("ctrl+q")
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        print(f"  {'quit (ctrl+q, to the app closed)':<52} CPU {cpu:7.3f} s  wall {wall:7.3f} s")
        timer.rows.append(("quit (ctrl+q, to the app closed)", cpu, wall, ""))
    # after the rest: the open above is timed in a process that has imported nothing yet
    if not only or "quit" in only:
        timer.rows.append(await quit_after_open(data))
    return timer.rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="build into (and reuse) this folder")
    parser.add_argument("--only", default="", help="quit,switcher,steps,pageup,context,"
                        "find,rewind,save,paste (the open and the last quit are always "
                        "timed; quit: also a quit right after an open of its own)")
    args = parser.parse_args()
    only = {x for x in args.only.split(",") if x}
    tmp = None
    if args.keep:
        data = args.keep / "data"
    else:
        tmp = tempfile.mkdtemp(prefix="scale-use-bench-")
        data = Path(tmp) / "data"
    try:
        if not (data / "keys").exists() and not any(data.glob("*")):
            w0, c0 = time.perf_counter(), time.process_time()
            build(data)
            print(f"built: {MESSAGES:,} messages in one conversation, {KEYS} conversations, "
                  f"{EXPERIENCES:,} experiences, {REFS:,} refs, {PINS} pins, {REWINDS} "
                  f"rewinds in {time.perf_counter() - w0:.1f} s "
                  f"(CPU {time.process_time() - c0:.1f} s)", flush=True)
        print(f"the real app at {SIZE[0]}x{SIZE[1]}; from the key to idle and the next frame:")
        asyncio.run(run(data, only))
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
