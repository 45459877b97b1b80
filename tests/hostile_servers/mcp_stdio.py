"""A hostile MCP server over stdio: raw JSON-RPC, no SDK, misbehaving on request.

It speaks just enough of the protocol to be a real server (``server/discover`` is
refused, so clients fall back to ``initialize``; ``tools/list``; ``tools/call``),
then breaks it in the ways the switches and tools below ask for. Everything is
written with one ``write`` of bytes, so a test controls each byte on the wire.

Start-up switches:
  --pids FILE          write this server's pid, then each helper's, one a line
  --alive-at-start F   first write to F one line: the pids already in the --pids file
                       that are still running (an earlier start's server or helpers)
  --helpers N          start N helper processes (stdio on /dev/null, same process group)
  --setsid-helpers N   start N helpers that leave the process group (setsid)
  --stubborn-helpers   helpers ignore SIGTERM (only SIGKILL ends them)
  --stderr-mb N        write N MB to stderr before serving
  --crash              exit with status 3 right after the start-up switches ran
  --garbage N          write N lines that are not JSON before serving
  --tools N            list N extra tools (tool_00001 …), one listing page
  --deep N             list a tool ``deep`` whose input schema is nested N levels
  --mark FILE          the ``hang`` tool writes "started", then "cancelled" when the
                       client cancels it
  --linger             keep running after stdin closes (a careless server)
  --wedge              after tools/list: ignore SIGTERM, stop reading, never exit
  --wedge-start        ignore SIGTERM and never answer anything

Tools (besides --tools/--deep ones):
  echo(text)           "echo: TEXT"
  hang()               never answers
  big(mb, kind)        one answer of MB megabytes: kind "text" or "image" (base64)
  bad_byte()           an answer holding the byte 0xff (invalid UTF-8)
  garbage(lines)       LINES non-JSON lines, then a normal answer
  endless(mb)          MB megabytes with no newline (0: until the pipe closes), then silence
  stderr(mb)           MB megabytes to stderr, then "flooded"
  exit(code)           exit at once with CODE, answering nothing (helpers stay)
  close_stdin()        closes its stdin, then answers "closed stdin" and keeps running
  close_stdout()       closes its stdout, answering nothing, and keeps running
  stop_reading()       "stopped reading", then never reads its stdin again (a large
                       request then fills the pipe and the client's write blocks)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

HELPER = """\
import os, signal, sys, time
if sys.argv[1] == "1":
    os.setsid()
if sys.argv[2] == "1":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open(sys.argv[3], "a") as f:
    f.write(f"{os.getpid()}\\n")
time.sleep(600)
"""

MB = 1024 * 1024
out = sys.stdout.buffer


def option(name: str, default: str | None = None) -> str | None:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def write(data: bytes) -> None:
    out.write(data)
    out.flush()


def send(message: dict) -> None:
    write(json.dumps(message).encode() + b"\n")


def answer(rid: object, result: dict) -> None:
    send({"jsonrpc": "2.0", "id": rid, "result": result})


def text_result(rid: object, text: str) -> None:
    answer(rid, {"content": [{"type": "text", "text": text}], "isError": False})


def start_helpers(pids: str | None) -> None:
    stubborn = "1" if "--stubborn-helpers" in sys.argv else "0"
    target = pids or os.devnull
    started = 0
    for flag, setsid in (("--helpers", "0"), ("--setsid-helpers", "1")):
        for _ in range(int(option(flag, "0"))):
            subprocess.Popen([sys.executable, "-c", HELPER, setsid, stubborn, target],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
            started += 1
    deadline = time.monotonic() + 30
    while pids and started and time.monotonic() < deadline:  # serve once all are running
        with open(pids) as f:
            if len(f.read().split()) > started:
                break
        time.sleep(0.01)


def flood_stderr(mb: float) -> None:
    block = (b"e" * 1023 + b"\n") * 1024
    for _ in range(int(mb)):
        sys.stderr.buffer.write(block)
    sys.stderr.buffer.write(b"the last stderr line\n")
    sys.stderr.buffer.flush()


def garbage(lines: int) -> None:
    write(b"".join(b"garbage line %d: not json {\n" % i for i in range(lines)))


def nested(depth: int) -> dict:
    schema: dict = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


def tools() -> list[dict]:
    listed = [{"name": name, "description": f"hostile {name}",
               "inputSchema": {"type": "object", "properties": props}}
              for name, props in (
                  ("echo", {"text": {"type": "string"}}), ("hang", {}),
                  ("big", {"mb": {"type": "number"}, "kind": {"type": "string"}}),
                  ("bad_byte", {}), ("garbage", {"lines": {"type": "integer"}}),
                  ("endless", {"mb": {"type": "number"}}), ("stderr", {"mb": {"type": "number"}}),
                  ("exit", {"code": {"type": "integer"}}), ("close_stdin", {}),
                  ("close_stdout", {}), ("stop_reading", {}))]
    for i in range(int(option("--tools", "0"))):
        listed.append({"name": f"tool_{i + 1:05d}", "description": f"extra tool {i + 1}",
                       "inputSchema": {"type": "object", "properties": {}}})
    if "--deep" in sys.argv:
        listed.append({"name": "deep", "description": "a deeply nested schema",
                       "inputSchema": nested(int(option("--deep", "0")))})
    return listed


def big(rid: object, mb: float, kind: str) -> None:
    size = int(mb * MB)
    if kind == "image":
        body = b"A" * (size - size % 4)
        block = b'{"type":"image","mimeType":"image/png","data":"' + body + b'"}'
    else:
        block = b'{"type":"text","text":"' + b"x" * size + b'"}'
    head = b'{"jsonrpc":"2.0","id":' + json.dumps(rid).encode() + b',"result":{"content":['
    write(head + block + b'],"isError":false}}\n')


def endless(mb: float) -> None:
    chunk = b"z" * MB
    sent = 0
    try:
        while not mb or sent < mb:
            out.write(chunk)
            out.flush()
            sent += 1
    except (BrokenPipeError, OSError):
        os._exit(0)
    while True:
        time.sleep(60)


def call(rid: object, name: str, args: dict) -> None:
    mark = option("--mark")
    if name == "echo":
        text_result(rid, f"echo: {args.get('text', '')}")
    elif name == "hang":
        if mark:
            with open(mark, "w") as f:
                f.write("started")
    elif name == "big":
        big(rid, float(args.get("mb", 1)), str(args.get("kind", "text")))
    elif name == "bad_byte":
        write(b'{"jsonrpc":"2.0","id":' + json.dumps(rid).encode()
              + b',"result":{"content":[{"type":"text","text":"bad \xff byte"}]}}\n')
    elif name == "garbage":
        garbage(int(args.get("lines", 1000)))
        text_result(rid, "after garbage")
    elif name == "endless":
        endless(float(args.get("mb", 0)))
    elif name == "stderr":
        flood_stderr(float(args.get("mb", 1)))
        text_result(rid, "flooded")
    elif name == "exit":
        os._exit(int(args.get("code", 0)))
    elif name in ("close_stdin", "close_stdout", "stop_reading"):
        if name == "close_stdout":
            os.close(1)
        else:
            if name == "close_stdin":  # before the answer: a request sent after it finds
                os.close(0)  # the pipe closed (one sent before could be read, then lost)
            text_result(rid, "closed stdin" if name == "close_stdin" else "stopped reading")
        while True:  # alive, and deaf
            time.sleep(60)
    else:
        text_result(rid, f"called {name}")


def serve() -> None:
    hung: set[object] = set()
    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        method, rid = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method == "server/discover":
            send({"jsonrpc": "2.0", "id": rid,
                  "error": {"code": -32601, "message": "Method not found"}})
        elif method == "initialize":
            answer(rid, {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                         "capabilities": {"tools": {}},
                         "serverInfo": {"name": "hostile", "version": "1"}})
        elif method == "tools/list":
            answer(rid, {"tools": tools()})
            if "--wedge" in sys.argv:
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                while True:
                    time.sleep(60)
        elif method == "tools/call":
            if params.get("name") == "hang":
                hung.add(rid)
            call(rid, str(params.get("name")), params.get("arguments") or {})
        elif method == "notifications/cancelled":
            mark = option("--mark")
            if mark and params.get("requestId") in hung:
                with open(mark, "w") as f:
                    f.write("cancelled")
        elif method == "ping":
            answer(rid, {})
        elif rid is not None:
            send({"jsonrpc": "2.0", "id": rid,
                  "error": {"code": -32601, "message": "Method not found"}})


def running(pid: int) -> bool:
    """Running, not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def main() -> None:
    pids = option("--pids")
    seen = option("--alive-at-start")
    if seen:
        try:
            with open(str(pids)) as f:
                earlier = [int(p) for p in f.read().split()]
        except OSError:
            earlier = []
        with open(seen, "a") as f:
            f.write(" ".join(str(p) for p in earlier if running(p)) + "\n")
    if pids:
        with open(pids, "a") as f:
            f.write(f"{os.getpid()}\n")
    start_helpers(pids)
    if "--wedge-start" in sys.argv:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            time.sleep(60)
    if "--stderr-mb" in sys.argv:
        flood_stderr(float(option("--stderr-mb", "0")))
    if "--crash" in sys.argv:
        sys.exit(3)
    if "--garbage" in sys.argv:
        garbage(int(option("--garbage", "0")))
    serve()
    if "--linger" in sys.argv:
        while True:
            time.sleep(60)


if __name__ == "__main__":
    main()
