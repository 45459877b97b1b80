"""Our stdio transport for MCP servers: every byte a server writes is bounded and checked.

It stands in for the SDK's ``stdio_client`` and yields the same pair of streams
to the SDK's session, because a server is untrusted input and the SDK's reader
was not built for that: it joined the pending text with each new chunk (a 50 MB
answer took 22.5 s), had no cap on a line (one that never ended grew without
limit), decoded strictly in a way that left the session waiting forever after
one invalid byte, logged a traceback per line that was not JSON, and sent the
server's stderr to a file that grew without limit and was read back whole.

Here:

- stdout is split into lines with a scan that never looks at a byte twice; a
  line over ``max_bytes`` is refused as soon as the buffer passes the cap;
- a line that is not UTF-8, not JSON, or not JSON-RPC, or a message over the
  cap, ends the connection with a reason (:attr:`Link.failure`): the session
  sees the stream end, so its pending requests fail at once, and the manager
  marks the server failed. Blank lines are skipped;
- a write to its stdin that fails (the server closed it but kept running) or
  that waits on a full pipe longer than a call may take (the server stopped
  reading: a large request fills the pipe's 64 KiB) ends the connection the same
  way, with a reason: a request partly written cannot be taken back, so no
  later request could be read right either;
- stderr is read as it comes and only its last :data:`TAIL_BYTES` are kept;
- the server runs under the supervisor of :mod:`.supervisor`, so its whole
  process group (and on Linux every helper it started) is gone when it exits,
  when we stop it, and when this process dies, however it dies.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...safety import one_line
from .listing import prune_listing
from .supervisor import KILL_AFTER_S, QUIT, REAP_S, can_supervise, supervised

#: the last bytes of a server's stderr kept to explain a failure
TAIL_BYTES = 8 * 1024
#: seconds a server gets to exit on its own once its stdin is closed (the protocol's way)
GRACE_S = 2.0
#: seconds the writer gets to flush what the session already handed it
FLUSH_S = 0.5
#: the same two when the app is quitting (:attr:`Link.quitting`): the person waits for
#: the app to go, and a server that has not left by then is ended (SIGTERM, then SIGKILL
#: ``supervisor.QUIT_KILL_AFTER_S`` later)
QUIT_GRACE_S = 0.2
QUIT_FLUSH_S = 0.1
#: seconds a failed write waits for the server's stdout to end: a server that exits
#: breaks its stdin too, and then it is said to have exited, not to refuse requests
LEFT_S = 0.5
#: bytes asked of a pipe per read
READ_BYTES = 256 * 1024
#: a line this long is handed over without a copy
SWAP_BYTES = 1024 * 1024


class BadOutput(Exception):
    """The server wrote something that is not a message we can take; ``str`` says what."""


class StderrTail:
    """The last ``limit`` bytes written to a server's stderr, and how many there were."""

    def __init__(self, limit: int = TAIL_BYTES) -> None:
        self.limit = limit
        self.total = 0
        self._buf = bytearray()

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self._buf += chunk
        if len(self._buf) > 2 * self.limit:  # trimmed in steps: amortised, never whole
            del self._buf[: len(self._buf) - self.limit]

    def text(self) -> str:
        return bytes(self._buf[-self.limit:]).decode("utf-8", errors="replace")

    def last_line(self) -> str:
        """The last non-empty line (a server's last words usually say why it stopped)."""
        lines = [ln.strip() for ln in self.text().splitlines() if ln.strip()]
        return lines[-1] if lines else ""


class LineSplitter:
    """Newline-delimited messages out of a byte stream; each byte is scanned once.

    Raises :class:`BadOutput` as soon as a line passes ``limit`` bytes, whether
    or not its end has arrived, so a line that never ends costs ``limit`` bytes.
    """

    def __init__(self, limit: int, setting: str = "max_message_mb") -> None:
        self.limit = limit
        self.setting = setting
        self._buf = bytearray()

    def feed(self, chunk: bytes) -> list[bytearray]:
        lines: list[bytearray] = []
        buf = self._buf
        scanned = len(buf)  # what was kept holds no newline
        buf += chunk
        start = 0
        while True:
            end = buf.find(b"\n", max(start, scanned))
            if end < 0:
                break
            if end - start > self.limit:
                raise self._too_large()
            if start == 0 and end >= SWAP_BYTES:
                # A large line is handed over as the buffer itself, not copied: only
                # what follows it (less than one read) is copied to a new buffer.
                rest = buf[end + 1:]
                del buf[end:]
                lines.append(buf)
                self._buf = buf = rest
                scanned = 0
                continue
            lines.append(buf[start:end])
            start = end + 1
        if start:
            del buf[:start]  # from the front of a bytearray: no copy of the rest
        if len(buf) > self.limit:
            raise self._too_large()
        return lines

    def _too_large(self) -> BadOutput:
        return BadOutput(f"sent a message over the {self.limit / 2**20:g} MB limit "
                         f"({self.setting})")




def parse_message(line: bytes | bytearray) -> Any | None:
    """One line as the SDK's ``SessionMessage``; None for a blank line; BadOutput if not one.

    Decoded as strict UTF-8, parsed by Python's ``json`` and validated by the
    SDK's own message model. This is faster than the SDK's ``validate_json``
    for large messages (0.25 s against 0.64 s for 50 MB, and one copy less), and
    it reads messages nested deeper than the SDK's parser allows (its limit
    failed a tool listing whose schema was 150 levels deep, see ``listing.py``).
    """
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter
    from pydantic import ValidationError

    if len(line) < 256 and not line.strip():
        return None
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadOutput(f"wrote bytes that are not UTF-8 on stdout (byte {exc.start + 1:,} of "
                        f"a {len(line):,}-byte line)") from None
    try:
        value = json.loads(text)
    except RecursionError:
        raise BadOutput("sent a message nested too deeply to read") from None
    except ValueError:
        raise BadOutput(f"wrote a line that is not JSON on stdout: {_preview(text)}") from None
    del text
    try:
        return SessionMessage(jsonrpc_message_adapter.validate_python(value, by_name=False))
    except (ValidationError, RecursionError):
        raise BadOutput("wrote JSON that is not a JSON-RPC message on stdout: "
                        f"{_preview(json.dumps(value)[:200])}") from None


def _preview(text: str) -> str:
    return repr(one_line(text, 80))


@dataclass
class Link:
    """What the manager sees of one stdio connection while it lasts, and after."""

    stderr: StderrTail = field(default_factory=StderrTail)
    #: why we dropped the connection ("" while it is fine, or when the server just left)
    failure: str = ""
    #: the supervisor's pid (the server's process group is its child's)
    pid: int | None = None
    #: the server's exit status when it left by itself (its stdout ended before it was
    #: stopped, and it exited), 128 + N for signal N; None when it was stopped
    returncode: int | None = None
    #: tools its listings named that were left out (see ``listing.py``)
    left_out: list[str] = field(default_factory=list)
    #: the app is quitting: stop the server with the short waits (``QUIT_GRACE_S``)
    quitting: bool = False
    #: a write to the server's stdin is under way (one that stays so waits for room in a
    #: full pipe: the server is not reading)
    writing: bool = False

    def __post_init__(self) -> None:
        import asyncio

        #: set when stdout ended: the server left, or we dropped it
        self.closed = asyncio.Event()


@contextlib.asynccontextmanager
async def stdio_transport(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: str | None,
    link: Link,
    *,
    max_bytes: int,
    setting: str = "max_message_mb",
    stall_s: float | None = None,
    stall_setting: str = "call_timeout_s",
) -> AsyncIterator[tuple[Any, Any]]:
    """Run ``argv`` as a stdio MCP server; yield the SDK's ``(read, write)`` streams.

    Leaving the context stops the server: stdin closed, :data:`GRACE_S` to exit
    (none when it broke the protocol; :data:`QUIT_GRACE_S` when the app is quitting),
    then the lifeline closed, which makes the supervisor kill the group. Every wait
    is bounded and shielded, so a cancelled caller still leaves no process behind.
    ``stall_s``: how long one write may wait for room in the server's stdin (a call's
    timeout, named by ``stall_setting``) before the server is taken to have stopped
    reading and the connection is dropped; None waits as long as it takes.
    """
    import anyio
    import anyio.abc
    from mcp.shared.message import SessionMessage

    life_r, life_w = os.pipe()
    try:
        if can_supervise():
            command, pass_fds = supervised(argv[0], argv[1:], life_r), (life_r,)
        else:
            command, pass_fds = list(argv), ()
        process: anyio.abc.Process = await anyio.open_process(
            command, env=dict(env), cwd=cwd, start_new_session=True, pass_fds=pass_fds)
    except BaseException:
        os.close(life_w)
        raise
    finally:
        os.close(life_r)
    link.pid = process.pid
    assert process.stdin and process.stdout and process.stderr
    stdin, stdout, stderr = process.stdin, process.stdout, process.stderr
    read_send, read_receive = anyio.create_memory_object_stream[Any](0)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()
    stopping = anyio.Event()  # set as we stop it: a write failing then is ours to cause

    async def read_stdout() -> None:
        lines = LineSplitter(max_bytes, setting)
        session_gone = False
        try:
            async with read_send:
                while True:
                    chunk = await stdout.receive(READ_BYTES)
                    if session_gone:
                        continue  # drained, so a server flushing on its way out can finish
                    batch = lines.feed(chunk)
                    batch.reverse()
                    while batch:
                        message = parse_message(batch.pop())  # no reference left behind
                        if message is None:
                            continue
                        link.left_out += prune_listing(message)
                        try:
                            await read_send.send(message)
                        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                            session_gone = True
                            break
        except BadOutput as exc:
            link.failure = str(exc)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError,
                OSError):
            pass
        finally:
            link.closed.set()

    async def read_stderr() -> None:
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError,
                                 anyio.BrokenResourceError, OSError):
            while True:
                link.stderr.feed(await stderr.receive(READ_BYTES))

    async def write_stdin() -> None:
        try:
            async with write_receive:
                async for message in write_receive:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    line = data.encode("utf-8") + b"\n"
                    del data
                    link.writing = True
                    try:
                        with anyio.move_on_after(stall_s) as stall:
                            await stdin.send(line)
                    finally:
                        link.writing = False  # a write that raised is not under way either
                    if stall.cancelled_caught and not stopping.is_set():
                        await refused(f"a {len(line):,}-byte request found its stdin full for "
                                      f"{stall_s:g} s: it stopped reading ({stall_setting})")
                        return
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as exc:
            if stopping.is_set():
                return
            if isinstance(exc, anyio.BrokenResourceError | BrokenPipeError |
                          ConnectionResetError):
                why = "the pipe is closed"
            else:
                why = one_line(str(exc) or type(exc).__name__, 200)
            with anyio.move_on_after(LEFT_S):
                await link.closed.wait()  # its stdout ended too: it left, and says so
            if not link.closed.is_set() and not stopping.is_set():  # stopped meanwhile: no news
                await refused(f"writing to its stdin failed ({why})")
        finally:
            writer_done.set()

    async def refused(why: str) -> None:
        # The server is still there but takes no more requests: fail it as a server
        # that broke the protocol is failed. The reason is set before the session's
        # side ends, so the calls waiting on it fail with it; then the manager is told.
        if not link.closed.is_set():  # else it left, or broke the protocol: that is the news
            link.failure = f"stopped accepting requests: {why}"
        await read_send.aclose()
        link.closed.set()

    async def wait_exit(timeout: float) -> bool:
        # returncode, not ``wait()``: asyncio's also waits for the pipes to close
        deadline = anyio.current_time() + timeout
        while process.returncode is None and anyio.current_time() < deadline:
            await anyio.sleep(0.01)
        return process.returncode is not None

    async def shut_down() -> None:
        stopping.set()
        left = link.closed.is_set() and not link.failure  # stdout ended before we stopped it
        write_send.close()
        read_receive.close()
        with anyio.move_on_after(QUIT_FLUSH_S if link.quitting else FLUSH_S):
            await writer_done.wait()
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await stdin.aclose()
        if not link.failure:
            await wait_exit(QUIT_GRACE_S if link.quitting else GRACE_S)
        if left and process.returncode is not None:
            link.returncode = process.returncode  # the supervisor's status is the server's
        if link.quitting:
            with contextlib.suppress(OSError):
                os.write(life_w, QUIT)  # the supervisor's short wait before SIGKILL
        os.close(life_w)  # the supervisor now ends what is left of the server
        if not await wait_exit(KILL_AFTER_S + REAP_S + 1.0):
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await wait_exit(2.0)
        for stream in (stdout, stderr):
            with contextlib.suppress(OSError, anyio.BrokenResourceError,
                                     anyio.ClosedResourceError):
                await stream.aclose()
        _close_transport(process)

    async with anyio.create_task_group() as group:
        group.start_soon(read_stdout)
        group.start_soon(read_stderr)
        group.start_soon(write_stdin)
        try:
            yield read_receive, write_send
        finally:
            with anyio.CancelScope(shield=True):
                await shut_down()
            group.cancel_scope.cancel()


def _close_transport(process: Any) -> None:
    """Close asyncio's subprocess transport now, not when it is collected.

    Left open (a pipe we stopped reading), it is closed by its ``__del__``, after
    the loop may have closed, which prints a traceback. Nothing public reaches
    it: this is the attribute walk the SDK's own stdio client does.
    """
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)
    if callable(close):
        with contextlib.suppress(PermissionError, RuntimeError):
            close()
