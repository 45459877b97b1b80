"""What attaching a large image costs the app: memory kept per attach, bytes per request.

The real app runs headless (Textual's ``run_test``) against a demo server in
its own process (its copies of each request are not ours); the image is a
19 MB PNG of noise (a new one each time, or ``--same``), attached with
``/attach`` and sent ``--attaches`` times, each with its own question, then
``--turns`` text-only turns follow. After each turn the collector runs and the
memory the process's allocations hold is read (glibc's ``mallinfo2``: RSS
also counts what the allocator keeps after a free, and moves with it); the
server logs each request's size and image count.

    .venv/bin/python bench/attach_bench.py [--attaches 3] [--turns 2] [--mb 19] [--same]
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import gc
import json
import os
import resource
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

_SERVER = r"""
import asyncio, json, sys
sys.path.insert(0, sys.argv[2])
from selfref_tui.demo.server import DemoServer
from selfref_tui.demo.script import Reply
from selfref_tui.context.images import image_urls

log = open(sys.argv[1], "a")

def answer(body, index):
    urls = [u for m in body["messages"] for u in image_urls(m.get("content"))]
    size = len(json.dumps(body))
    log.write(json.dumps({"bytes": size, "images": len(urls)}) + "\n")
    log.flush()
    body["messages"].clear()  # the server keeps every request: not this one's megabytes
    return Reply(text=f"Answer {index}.")

async def main():
    server = DemoServer(answer, strict=False)
    print(await server.start(), flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await server.stop()

asyncio.run(main())
"""


def noise_png(megabytes: float) -> bytes:
    """An incompressible PNG of about ``megabytes`` MB (stored deflate blocks of noise)."""
    side = int((megabytes * 1024 * 1024 / 3) ** 0.5)
    raw = b"".join(b"\x00" + os.urandom(side * 3) for _ in range(side))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(raw, 0)) + chunk(b"IEND", b""))


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def in_use_mb() -> float:
    """Memory the process's allocations hold now (glibc's mallinfo2: in-use heap plus
    mapped blocks), without what the allocator keeps after a free, which RSS counts."""
    try:
        mallinfo2 = ctypes.CDLL(None).mallinfo2
    except (OSError, AttributeError):
        return float("nan")
    mallinfo2.restype = _MallInfo2
    info = mallinfo2()
    return (info.uordblks + info.hblkhd) / 2**20


async def run(options: argparse.Namespace, tmp: Path) -> None:
    from selfref_tui.config import AppConfig, ProviderConfig
    from selfref_tui.ui.app import SelfRefApp

    pictures = []
    for n in range(1 if options.same else options.attaches):
        pictures.append(tmp / f"big-{n}.png")
        pictures[-1].write_bytes(noise_png(options.mb))
    log = tmp / "requests.jsonl"
    server = subprocess.Popen([sys.executable, "-c", _SERVER, str(log), str(ROOT)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    url = server.stdout.readline().strip()
    provider = ProviderConfig(base_url=url, api_key="bench", model="bench-model", max_retries=0,
                              timeout_s=60, context_window=128_000)
    app = SelfRefApp(AppConfig(provider=provider, data_dir=tmp / "data", key="main"))
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            while not (app.ready and app.header.status == "ready"):
                await pilot.pause(0.05)

            async def turn(text: str, picture: Path | None) -> float:
                started = time.perf_counter()
                if picture is not None:
                    app.chat_input.insert(f"/attach {picture}")
                    await pilot.press("enter")
                    await pilot.pause()
                app.chat_input.insert(text)
                await pilot.press("enter")
                await pilot.pause(0.1)
                while app.router is None or app.router.busy or app._events:
                    await pilot.pause(0.05)
                await pilot.pause(0.3)  # the transcript draws the new rows
                return time.perf_counter() - started

            gc.collect()
            base, base_used = rss_mb(), in_use_mb()
            print(f"PNG {pictures[0].stat().st_size / 2**20:.1f} MB; app at start: RSS "
                  f"{base:.0f} MB, in use {base_used:.0f} MB")
            used = base_used
            for n in range(options.attaches + options.turns):
                attach = n < options.attaches
                picture = pictures[n % len(pictures)] if attach else None
                seconds = await turn(f"question {n + 1}", picture)
                gc.collect()
                now, before = in_use_mb(), used
                used = now
                print(f"{'attach' if attach else 'text  '} turn {n + 1}: {seconds:5.2f} s, "
                      f"in use {now:6.0f} MB ({now - before:+5.0f} MB), RSS {rss_mb():6.0f} MB",
                      flush=True)
                if n + 1 == options.attaches:
                    per = (now - base_used) / options.attaches
                    print(f"kept per attach: {per:+.0f} MB in use on average")
            print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(10)
    for n, line in enumerate(log.read_text().splitlines(), 1):
        entry = json.loads(line)
        print(f"request {n}: {entry['bytes'] / 2**20:6.1f} MB, {entry['images']} images")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--attaches", type=int, default=3)
    parser.add_argument("--turns", type=int, default=2)
    parser.add_argument("--mb", type=float, default=19.0)
    parser.add_argument("--same", action="store_true",
                        help="attach the same picture each time (a request carries it once)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="attach-bench-") as tmp:
        asyncio.run(run(options, Path(tmp)))


if __name__ == "__main__":
    main()
