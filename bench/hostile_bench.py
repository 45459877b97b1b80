"""Time and peak memory of ``selfref-tui`` against hostile servers and files.

Each case runs the real command (``python -m selfref_tui …``) as a process
against a server from ``tests/hostile_servers`` (or a planted file), polls its
peak resident memory (``VmHWM``) and kills it when it passes ``--limit``
seconds or ``--rss-cap`` MB, so a case that would run forever or eat the
machine still prints a figure ("killed at …").

    .venv/bin/python bench/hostile_bench.py [--limit 30] [--rss-cap 2000] [CASE ...]

Cases: baseline (the same ``ask`` against a server that answers 404: what a
case costs beyond it is the hostile part), endless, trickle, redirect (window
discovery: a /v1/models body that never ends, one that trickles a byte a
second, a 302 whose own body never ends), fifo,
zero (windows.json a FIFO, a link to /dev/zero), absurd (a 400-digit n_ctx,
``context show``), images (a tool result of 200 2x2 PNGs, then a second ``ask``),
chat-endless, chat-trickle, chat-gzip (the chat request answered 500 with an error
body that never ends, that trickles a byte a second, that is a gzip bomb),
chat-line (a 200 whose first event never ends), chat-redirect (a 307 whose own body
never ends); chat-ok is their baseline (a one-word answer). The chat cases run
``ask`` with its default timeouts and retries, and ``--first-byte`` seconds as
SELFREF_FIRST_BYTE_TIMEOUT when given.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.hostile_servers import command, spawn  # noqa: E402


def _peak_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def measure(args: list[str], env: dict[str, str], limit: float,
            rss_cap: float) -> tuple[float, float, str]:
    """(seconds, peak MB, how it ended) of ``python -m selfref_tui ARGS``."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "selfref_tui", *args], env=full_env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT)
    peak, ending = 0.0, ""
    while proc.poll() is None:
        peak = max(peak, _peak_mb(proc.pid))
        elapsed = time.perf_counter() - started
        if elapsed > limit or peak > rss_cap:
            ending = (f"killed at {elapsed:.1f} s" if elapsed > limit
                      else f"killed at {peak:.0f} MB")
            proc.kill()
            break
        time.sleep(0.02)
    out, err = proc.communicate()
    elapsed = time.perf_counter() - started
    if not ending:
        last = (err.strip().splitlines() or out.strip().splitlines() or [""])[-1]
        ending = f"exit {proc.returncode}: {last[:110]}"
    return elapsed, peak, ending


def _dirs() -> tuple[Path, dict[str, str]]:
    tmp = Path(tempfile.mkdtemp(prefix="hostile-bench-"))
    (tmp / "data").mkdir(mode=0o700)
    env = {"OPENAI_API_KEY": "sk-bench", "XDG_CONFIG_HOME": str(tmp / "config"),
           "SELFREF_DATA_DIR": str(tmp / "data"), "HOME": str(tmp)}
    return tmp, env


def case_window(mode: str, limit: float, rss_cap: float) -> tuple[float, float, str]:
    _, env = _dirs()
    with spawn("http_window", "--models", mode) as url:
        return measure(["ask", "hi", "--base-url", url, "--model", "hostile"], env, limit,
                       rss_cap)


def case_chat(mode: str, limit: float, rss_cap: float,
              first_byte: float | None = None) -> tuple[float, float, str]:
    _, env = _dirs()
    if first_byte:
        env["SELFREF_FIRST_BYTE_TIMEOUT"] = str(first_byte)
    with spawn("http_window", "--chat", mode) as url:
        return measure(["ask", "hi", "--base-url", url, "--model", "hostile",
                        "--context-window", "8192"], env, limit, rss_cap)


def case_cache_file(kind: str, limit: float, rss_cap: float) -> tuple[float, float, str]:
    tmp, env = _dirs()
    cache = tmp / "data" / "windows.json"
    if kind == "fifo":
        os.mkfifo(cache)
    else:
        cache.symlink_to("/dev/zero")
    with spawn("http_window") as url:
        return measure(["ask", "hi", "--base-url", url, "--model", "hostile"], env, limit,
                       rss_cap)


def case_absurd(limit: float, rss_cap: float) -> tuple[float, float, str]:
    _, env = _dirs()
    with spawn("http_window", "--props", "absurd", "--n-ctx", "9" * 400) as url:
        return measure(["context", "show", "--base-url", url, "--model", "hostile"], env,
                       limit, rss_cap)


def case_images(limit: float, rss_cap: float) -> tuple[float, float, str]:
    from selfref_tui.demo import DemoServer, Reply
    from selfref_tui.demo.script import ToolCall

    tmp, env = _dirs()
    config = tmp / "config.toml"
    argv = command("mcp_images")
    config.write_text(f"[mcp.servers.img]\ncommand = {json.dumps(argv[0])}\n"
                      f"args = {json.dumps(argv[1:])}\ntrust = [\"*\"]\n", encoding="utf-8")
    script = [Reply(tool_calls=[ToolCall("mcp__img__many_images", {"count": 200}, id="c1")]),
              Reply(text="Two hundred squares."), Reply(text="Still here.")]
    server = DemoServer(script, strict=False)
    url = server.start_in_thread()
    try:
        base = ["--base-url", url, "--config", str(config), "--context-window", "128000"]
        first = measure(["ask", "draw", *base], env, limit, rss_cap)
        second = measure(["ask", "again", *base], env, limit, rss_cap)
    finally:
        server.stop_thread()
    return first[0] + second[0], max(first[1], second[1]), f"first {first[2]}; second {second[2]}"


CASES = {
    "baseline": lambda lim, cap: case_window("missing", lim, cap),
    "endless": lambda lim, cap: case_window("endless", lim, cap),
    "trickle": lambda lim, cap: case_window("trickle", lim, cap),
    "redirect": lambda lim, cap: case_window("redirect", lim, cap),
    "fifo": lambda lim, cap: case_cache_file("fifo", lim, cap),
    "zero": lambda lim, cap: case_cache_file("zero", lim, cap),
    "absurd": case_absurd,
    "images": case_images,
    **{f"chat-{name}": functools.partial(case_chat, mode)
       for name, mode in (("ok", "ok"), ("endless", "error-endless"),
                          ("trickle", "error-trickle"),
                          ("gzip", "error-gzip"), ("line", "line-endless"),
                          ("redirect", "redirect"))},
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("cases", nargs="*", default=list(CASES))
    parser.add_argument("--limit", type=float, default=30.0)
    parser.add_argument("--rss-cap", type=float, default=2000.0)
    parser.add_argument("--first-byte", type=float, default=None,
                        help="SELFREF_FIRST_BYTE_TIMEOUT for the chat cases")
    options = parser.parse_args()
    for name in options.cases:
        extra = (options.first_byte,) if name.startswith("chat-") else ()
        seconds, peak, ending = CASES[name](options.limit, options.rss_cap, *extra)
        print(f"{name:13} {seconds:6.1f} s  peak {peak:7.0f} MB  {ending}", flush=True)


if __name__ == "__main__":
    main()
