"""Running the tool calls of one assistant message, concurrently, abortably.

Each call runs in its own task of an :class:`asyncio.TaskGroup`. A result is
committed (and ``ToolCallEnded``/``ToolCallError`` emitted) the moment its
tool finishes, so a crash or an abort loses only calls still running. When
the abort signal fires, the running calls are cancelled at once and each gets
a ``ToolCancelledMutation``, which keeps the transcript valid (every call has
a result) without pretending a tool finished.

Where the tools come from is a seam: a :class:`ToolSource` offers schemas and
runs the calls it handles. The built-in tools are one source; other sources
(MCP servers, say) are appended to ``Agent.tool_sources`` and the batch asks
each in order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ...context.images import cap_images, image_urls
from ...context.mutations import (
    MultimodalToolResultMutation,
    ToolCancelledMutation,
    ToolResultMutation,
)
from ...context.tool_errors import error_content
from ..abort import AbortSignal
from ..events import EventSink, ToolCallEnded, ToolCallError
from .builtin import (
    _FORK_NAMES,
    ToolContext,
    ToolError,
    now_iso,
    parse_arguments,
    run_tool,
)
from .schemas import TOOL_NAMES, tool_schemas

#: tools whose output is never turned into an fd (reading an fd must not make another)
NO_FD_TOOLS = frozenset({"read_fd"})


@dataclass(frozen=True)
class MultimodalOutput:
    """A result holding images: they reach the model in ``user_messages``.

    Providers take images only in user messages, so the batch commits a
    ``MultimodalToolResultMutation``; ``text`` is what front ends show for the call.
    A source returns it instead of a string; it sizes its own text (fds).
    """

    text: str
    user_messages: list[dict[str, Any]]


@runtime_checkable
class ToolSource(Protocol):
    """A set of tools the model may call."""

    def schemas(self) -> list[dict]:
        """The OpenAI ``tools`` entries this source offers for the next request."""
        ...

    def handles(self, name: str) -> bool:
        """Whether a call named ``name`` is this source's to run."""
        ...

    async def call(self, name: str, args: dict[str, Any],
                   ctx: ToolContext) -> str | MultimodalOutput:
        """Run one call; raise :class:`ToolError` for a problem the model should read."""
        ...


@dataclass(frozen=True)
class BuiltinTools:
    """The tools in ``tools.py``: memory, refs and fds, and forks below the depth limit."""

    forks: bool = True
    refs: bool = True

    def schemas(self) -> list[dict]:
        return tool_schemas(forks=self.forks, refs=self.refs)

    def handles(self, name: str) -> bool:
        return name in TOOL_NAMES and (self.forks or name not in _FORK_NAMES)

    async def call(self, name: str, args: dict[str, Any], ctx: ToolContext) -> str:
        return await run_tool(name, args, ctx)


def schemas_of(sources: Sequence[ToolSource]) -> list[dict]:
    """The tool list of the next request: every source's schemas, first name wins."""
    seen: set[str] = set()
    out: list[dict] = []
    for source in sources:
        for schema in source.schemas():
            name = str((schema.get("function") or {}).get("name", ""))
            if name in seen:
                continue
            seen.add(name)
            out.append(schema)
    return out


Commit = Callable[[list, list[dict]], None]


@dataclass
class _Call:
    id: str
    name: str
    arguments: str
    ctx: ToolContext | None = None
    finished: bool = False
    #: its result (or marker) is stored
    committed: bool = False


@dataclass
class ToolBatch:
    """One message's tool calls; :meth:`run` returns ``"ok"`` or ``"aborted"``."""

    key: str
    sources: Sequence[ToolSource]
    emit: EventSink
    #: persist patches (and fd records) now: ``commit(mutations, records)``
    commit: Commit
    #: builds the context of one call from its id
    make_context: Callable[[str], ToolContext]
    fd_threshold_chars: int
    #: what was running when the abort fired ("tools" or "forks"), read at that moment
    stage_probe: Callable[[], str] = lambda: "tools"
    #: the names the request offered (None: any a source handles); a call to another
    #: tool is refused, so a small window's reduced set is what the model can use
    offered: frozenset[str] | None = None
    #: the most tokens one result's images may cost (None: no limit); see cap_images
    image_tokens: int | None = None
    calls: list[_Call] = field(default_factory=list)
    abort_stage: str = "tools"

    async def run(self, calls: list[dict], abort: AbortSignal) -> str:
        """Run ``calls`` (stored ``tool_calls`` entries) until all finish or ``abort`` fires."""
        runnable: list[tuple[_Call, dict[str, Any]]] = []
        for raw in calls:
            function = raw.get("function") or {}
            call = _Call(str(raw.get("id", "")), str(function.get("name", "")),
                         str(function.get("arguments", "")))
            self.calls.append(call)
            try:
                args = parse_arguments(call.arguments)
            except ToolError as exc:
                self._failed(call, str(exc), 0.0, [])
                continue
            call.ctx = self.make_context(call.id)
            runnable.append((call, args))
        tasks: list[asyncio.Task] = []

        def cancel_all() -> None:
            self.abort_stage = self.stage_probe()
            for task in tasks:
                task.cancel()

        unhook: Callable[[], None] = lambda: None  # noqa: E731
        try:
            async with asyncio.TaskGroup() as group:
                for call, args in runnable:
                    tasks.append(group.create_task(self._one(call, args),
                                                   name=f"tool:{call.name}"))
                unhook = abort.on_fire(cancel_all)
        except asyncio.CancelledError:
            # The turn's own task was cancelled: the group cancelled the calls.
            self._cancelled("cancelled")
            raise
        except BaseExceptionGroup as group:
            # Only a failed commit gets here (tools' own errors become results): the
            # group cancelled the other calls. Each call still gets a stored result,
            # so the transcript stays valid; the loop reports one internal error.
            failure = group.exceptions[0]
            self._close_after_failure(failure)
            raise failure from None
        finally:
            unhook()
        if abort.fired and any(not c.finished for c in self.calls):
            self._cancelled(abort.reason)
            return "aborted"
        return "ok"

    async def _one(self, call: _Call, args: dict[str, Any]) -> None:
        assert call.ctx is not None
        ok, text, duration = await self._execute(call.name, args, call.ctx)
        call.finished = True
        if isinstance(text, MultimodalOutput):
            if self.image_tokens is not None:  # whatever the source: no result fills the window
                text = MultimodalOutput(text.text, cap_images(text.user_messages,
                                                              self.image_tokens))
            self.commit([MultimodalToolResultMutation(call.id, call.name, call.arguments,
                                                      text.user_messages)], call.ctx.records)
            call.committed = True
            images = tuple(url for m in text.user_messages for url in image_urls(m.get("content")))
            self.emit(ToolCallEnded(key=self.key, call_id=call.id, name=call.name,
                                    arguments=call.arguments, result=text.text,
                                    duration_s=duration, images=images))
        elif ok:
            self.commit([ToolResultMutation(call.id, text, duration, error=False)],
                        call.ctx.records)
            call.committed = True
            self.emit(ToolCallEnded(key=self.key, call_id=call.id, name=call.name,
                                    arguments=call.arguments, result=text, duration_s=duration))
        else:
            self._failed(call, text, duration, call.ctx.records)

    async def _execute(self, name: str, args: dict[str, Any],
                       ctx: ToolContext) -> tuple[bool, str | MultimodalOutput, float]:
        started = ctx.clock()

        def took() -> float:  # the tool's time: the person's answers to it left out
            return max(0.0, ctx.clock() - started - ctx.waited_s)

        source = next((s for s in self.sources if s.handles(name)), None)
        try:
            if source is None:
                raise ToolError(
                    f"unknown tool '{name}'; use one of the tools listed in this request"
                )
            if self.offered is not None and name not in self.offered:
                raise ToolError(
                    f"tool '{name}' is not offered in this request (the context window is "
                    "too small for every tool); use one of the tools listed in this request"
                )
            text = await source.call(name, args, ctx)
        except ToolError as exc:
            return False, str(exc), took()
        except Exception as exc:  # a tool bug becomes a result the model can read
            return False, f"the tool failed: {exc}", took()
        if isinstance(text, MultimodalOutput):
            return True, text, took()
        if name not in NO_FD_TOOLS and len(text) > self.fd_threshold_chars:
            text, record = ctx.fds.add_output(text, now_iso(), f"tool:{name}")
            if record is not None:
                ctx.records.append(record if "t" in record else {"t": "fd", **record})
        return True, text, took()

    def _failed(self, call: _Call, error: str, duration: float, records: list[dict]) -> None:
        call.finished = True
        self.commit([ToolResultMutation(call.id, error_content(error), duration, error=True)],
                    records)
        call.committed = True
        self.emit(ToolCallError(key=self.key, call_id=call.id, name=call.name,
                                arguments=call.arguments, error=error, duration_s=duration))

    def _cancelled(self, reason: str) -> None:
        open_calls = [c for c in self.calls if not c.finished]
        for call in open_calls:
            call.finished = True
        if open_calls:
            self.commit([ToolCancelledMutation(c.id, c.name, reason) for c in open_calls], [])
            for call in open_calls:
                call.committed = True

    def _close_after_failure(self, failure: BaseException) -> None:
        """After a commit failed: a result for every call still without one.

        The call whose result could not be saved ran, so it gets an error result
        saying so; the calls the group cancelled get ``ToolCancelledMutation``.
        If the store refuses these too, there is nothing more to save here (the
        request is still valid: compiling answers a call left without a result).
        """
        said = " ".join(str(failure).split())[:200] or type(failure).__name__
        markers: list = []
        for call in self.calls:
            if call.committed:
                continue
            if call.finished:
                markers.append(ToolResultMutation(call.id, error_content(
                    f"the tool ran, but its result could not be saved ({said})"), error=True))
            else:
                markers.append(ToolCancelledMutation(
                    call.id, call.name, f"stopped: saving another tool's result failed ({said})"))
            call.finished = call.committed = True
        if markers:
            try:
                self.commit(markers, [])
            except Exception:  # the store is failing: the loop reports the first error
                pass


def default_roots() -> tuple[Path, ...]:
    return (Path.cwd(),)
