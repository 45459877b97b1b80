"""The handlers of the tools the model can call (their JSON schemas: ``schemas``).

Handlers take parsed arguments and a :class:`ToolContext` (the turn's session,
ref/fd table, fork manager, a way to ask the person) and return the text the
model sees. Errors a model can fix are returned as
:class:`ToolError` messages, never raised into the loop.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .history_recall import HistoryRecall


class ToolError(Exception):
    """A problem the model should read and fix (bad argument, unknown id...)."""


AskFn = Callable[[str, tuple[str, ...], str], Awaitable[str]]

#: the ``compact`` error when nothing was added since the summary the model reads
JUST_COMPACTED = ("the conversation was compacted just now and nothing was added since: the "
                  "summary you read is current. Continue the work from it")


@dataclass
class ToolContext:
    """What one tool call may use; ``records`` collects fd records to persist with it."""

    key: str
    session: Any
    fds: Any
    forks: Any | None
    ask: AskFn
    roots: tuple[Path, ...]
    call_id: str = ""
    #: the person allowed changing existing files when no one can be asked (``ask``)
    allow_overwrite: bool = False
    #: ``[agent] memory_writes``: "ask" makes remember/forget wait for the person's yes
    memory_writes: str = "allow"
    #: the person allowed memory writes when no one can be asked (``ask --allow-memory``)
    allow_memory: bool = False
    #: ``[agent] review_compaction``: the person sees the summary before it is applied
    review_compaction: bool = False
    #: the key's search index over its history (:class:`HistoryRecall`), kept by the agent
    #: across turns; None: one is made for the call
    history_index: Any = None
    records: list[dict] = field(default_factory=list)
    #: the key's file checkpoints (``selfref.checkpoints.Checkpoints``): what a write
    #: replaces is kept, so a rewind can put it back
    checkpoints: Any = None
    #: what the call is timed with (a test passes one it moves by hand)
    clock: Callable[[], float] = time.perf_counter
    #: seconds this call's questions stood open: the person's time, not the tool's, so
    #: the call's time leaves them out (a reviewed compaction read "compact 68.40s")
    waited_s: float = 0.0

    def __post_init__(self) -> None:
        asker = self.ask

        async def timed(prompt: str, choices: tuple[str, ...], default: str) -> str:
            asked = self.clock()
            try:
                return await asker(prompt, choices, default)
            finally:
                self.waited_s += self.clock() - asked

        self.ask = timed


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def parse_arguments(raw: str) -> dict[str, Any]:
    """Arguments as a dict, or a ToolError the model can act on."""
    text = raw.strip() or "{}"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ToolError(
            f"the arguments are not valid JSON ({exc.msg} at position {exc.pos}); "
            "call the tool again with a JSON object"
        ) from None
    if not isinstance(value, dict):
        raise ToolError("the arguments must be a JSON object; call the tool again")
    return value


def _need_str(args: dict[str, Any], name: str) -> str:
    value = args.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ToolError(f"'{name}' is required and must be a non-empty string")
    return value


async def run_tool(name: str, args: dict[str, Any], ctx: ToolContext) -> str:
    """Run one tool; raise ToolError for problems the model should see."""
    handler = _HANDLERS.get(name)
    if handler is None or (name in _FORK_NAMES and ctx.forks is None):
        raise ToolError(f"unknown tool '{name}'; use one of the tools listed in this request")
    return await handler(args, ctx)


async def _remember(args: dict[str, Any], ctx: ToolContext) -> str:
    text = _need_str(args, "text")
    await _consent(ctx, "remember", text.strip())
    exp_id = ctx.session.remember(text, source="agent")
    return json.dumps({"experience_id": exp_id, "status": "stored from the next step on"})


async def _forget(args: dict[str, Any], ctx: ToolContext) -> str:
    exp_id = _need_str(args, "experience_id")
    known = ctx.session.experience(exp_id)
    if known is None:
        raise ToolError(f"no experience with id '{exp_id}'; see the <experiences> block")
    await _consent(ctx, "forget", f"{exp_id}: {known.get('text', '')}")
    if not ctx.session.forget(exp_id):  # forgotten meanwhile (the person, in the sidebar)
        raise ToolError(f"no experience with id '{exp_id}'; see the <experiences> block")
    return json.dumps({"experience_id": exp_id, "status": "forgotten"})


async def _consent(ctx: ToolContext, action: str, text: str) -> bool:
    """The person's yes to a memory write; raises the refusal the model reads otherwise.

    Only with ``memory_writes = "ask"``: the model's wish does not count as
    consent, and a run that cannot ask (``ask``) refuses unless the person
    passed ``--allow-memory``. False when nothing was asked (allowed by config).
    """
    if ctx.memory_writes != "ask":
        return False
    from .consent import (
        CONSENT_CHOICES,
        DENIED_REFUSAL,
        NOT_ASKED_REFUSAL,
        consent_prompt,
    )

    choice = await ctx.ask(consent_prompt(action, text), CONSENT_CHOICES, NOT_ASKED)
    if choice == NOT_ASKED:
        if ctx.allow_memory:
            return False
        raise ToolError(NOT_ASKED_REFUSAL)
    if choice != CONSENT_CHOICES[0]:
        raise ToolError(DENIED_REFUSAL)
    return True


async def _compact(args: dict[str, Any], ctx: ToolContext) -> str:
    from ...context.summary import Summary, compacted_just_now

    _need_str(args, "goal")
    if compacted_just_now(ctx.session.memory.messages):
        raise ToolError(JUST_COMPACTED)
    fields = dict(args)
    result: dict[str, Any] = {
        "status": "queued", "note": "the summary replaces the conversation after these tool calls"}
    reviewed = False
    if ctx.review_compaction:
        from ...context.summary_edit import editable_text, summary_from_text
        from .review import ACCEPT, CANCELLED_NOTE, EDITED_NOTE, REVIEW_CHOICES, edited_text
        from .review import review_prompt as prompt_for

        text = editable_text(Summary.from_dict(fields))
        answer = await ctx.ask(prompt_for(text), REVIEW_CHOICES, NOT_ASKED)
        edited = edited_text(answer)
        if answer not in (NOT_ASKED, ACCEPT) and edited is None:
            return json.dumps({"status": "cancelled", "note": CANCELLED_NOTE})
        reviewed = answer != NOT_ASKED
        if edited is not None and edited != text:
            fields = asdict(summary_from_text(edited))
            result["note"] = EDITED_NOTE
    remember = Summary.from_dict(fields).remember
    if remember and not reviewed:  # a summary the person accepted has their yes already
        try:
            await _consent(ctx, "remember", "\n".join(f"- {t}" for t in remember))
        except ToolError as refusal:
            fields["remember"] = []
            result["remember"] = f"not stored: {refusal}"
    ctx.session.compact(**fields)
    return json.dumps(result)


async def _inspect(args: dict[str, Any], ctx: ToolContext) -> str:
    return json.dumps(ctx.session.inspect(), ensure_ascii=False, default=str)


async def _search_history(args: dict[str, Any], ctx: ToolContext) -> str:
    """Every stored message of the key, read through the store (``MemoryKey.entry(n)``),
    not the working context: compacted messages are found like any other."""
    from ...context.recall import RecallError, render_search

    query = _need_str(args, "query")
    from ...context.numbers import whole_number

    before = args.get("before")
    if before is not None and (before := whole_number(before)) is None:
        raise ToolError("before must be a message number")
    recall = ctx.history_index if ctx.history_index is not None else HistoryRecall()
    memory = ctx.session.memory
    await recall.catch_up(memory)  # usually done already (HistoryRecall.prepare)
    async with recall.lock:  # one search at a time updates the key's index
        try:
            result = recall.index.search(memory, query, limit=args.get("limit"), before=before,
                                         include_rewound=args.get("include_rewound") is True)
        except RecallError as exc:
            raise ToolError(str(exc)) from None
    return render_search(result, query, before=before)


async def _read_history(args: dict[str, Any], ctx: ToolContext) -> str:
    from ...context.recall import RecallError, read_history

    try:
        return read_history(ctx.session.memory, args.get("start"), args.get("count"),
                            include_rewound=args.get("include_rewound") is True)
    except RecallError as exc:
        raise ToolError(str(exc)) from None


async def _fork_spawn(args: dict[str, Any], ctx: ToolContext) -> str:
    result = ctx.forks.spawn(_need_str(args, "task"), str(args.get("instruction", "")), ctx.call_id)
    return json.dumps(result)


async def _fork_gather(args: dict[str, Any], ctx: ToolContext) -> str:
    results = await ctx.forks.gather_all(
        include_history=bool(args.get("include_history", False)), records=ctx.records
    )
    return json.dumps(results, ensure_ascii=False)


async def _list_refs(args: dict[str, Any], ctx: ToolContext) -> str:
    return ctx.fds.list_refs()


async def _get_ref(args: dict[str, Any], ctx: ToolContext) -> str:
    ref_id = _need_str(args, "ref_id").removeprefix("ref:")
    return ctx.fds.get_ref(ref_id)


_READ_OPTS = ("page", "read_all", "mode", "start", "count")


async def _read_fd(args: dict[str, Any], ctx: ToolContext) -> str:
    fd = _need_str(args, "fd")
    opts = {k: args[k] for k in _READ_OPTS if k in args}
    if args.get("extract_to_new_fd"):
        text, record = ctx.fds.extract_to_new_fd(fd, **opts)
        if record is not None:
            ctx.records.append(_tagged(record, "fd"))
        return text
    return ctx.fds.read_fd(fd, **opts)


#: what ``ask`` returns when no front end can put the question to the person
NOT_ASKED = "not asked"


async def _fd_to_file(args: dict[str, Any], ctx: ToolContext) -> str:
    """Confined write; changing an existing file needs the person's yes, never the model's.

    ``exist_ok=true`` from the model does not count as consent. When the file
    did not exist at the question, the write is told so (``exist_ok=False``),
    so a file appearing meanwhile is refused rather than overwritten unasked.
    """
    from ...refs.fds import FdError
    from ...selfref.file_walk import FileWriteError
    from ...selfref.files import fd_to_file, refuse_read_only

    fd = _need_str(args, "fd")
    file_path = _need_str(args, "file_path")
    mode = str(args.get("mode", "write"))
    # What would fail anyway fails before the person is asked about it.
    if mode not in ("write", "append", "insert"):
        raise ToolError(f"mode must be write, append or insert, not {mode!r}")
    try:
        ctx.fds.lookup(fd)
    except FdError as exc:
        return exc.xml()
    exist_ok = False
    target = _existing_target(file_path, ctx.roots)
    if target is not None and args.get("exist_ok") is not False:
        try:  # a file the person made read-only stays so: refused, not asked about
            refuse_read_only(target, file_path)
        except FileWriteError as exc:
            return FdError(exc.kind, str(exc)).xml()
        yes = mode if mode in ("append", "insert") else "overwrite"
        where = {"append": "append to", "insert": "insert into"}.get(mode, "overwrite")
        # The file that would change, as the write resolves it (a link inside
        # the roots may point elsewhere): the person says yes to that file.
        shown = file_path if _lexical(file_path, ctx.roots) == target else (
            f"{target} (the model named {file_path})")
        prompt = f"The model wants to {where} {shown}, which exists. Allow it?"
        choice = await ctx.ask(prompt, (yes, "keep"), NOT_ASKED)
        if choice == NOT_ASKED and not ctx.allow_overwrite:
            raise ToolError(
                f"{file_path} exists and the person could not be asked (a non-interactive run); "
                "existing files are never changed without their yes — write to a new path, or "
                "the person can rerun with --allow-overwrite")
        if choice not in (NOT_ASKED, yes):
            raise ToolError(f"{file_path} exists and the person chose to keep it unchanged; "
                            "write to a new path instead")
        exist_ok = True
    else:
        target = None  # nothing to say yes to: nothing to hold the write to
    return fd_to_file(
        ctx.fds,
        fd,
        file_path,
        mode=mode,
        insert_at_line=args.get("insert_at_line"),
        exist_ok=exist_ok,
        create=bool(args.get("create", True)),
        roots=ctx.roots,
        raw=args.get("raw") is True,
        checkpoint=(ctx.checkpoints.recorder(ctx.call_id, ctx.records, now_iso())
                    if ctx.checkpoints is not None else None),
        expect=target,  # the file the person said yes to: the write goes there or nowhere
    )


def _lexical(file_path: str, roots: tuple[Path, ...]) -> Path:
    """Where ``file_path`` points before any link is followed."""
    base = roots[0] if roots else Path.cwd()
    return Path(os.path.normpath(os.path.join(base, os.path.expanduser(file_path))))


def _existing_target(file_path: str, roots: tuple[Path, ...]) -> Path | None:
    """The existing file the write would change (as the write resolves the path), or None."""
    from ...selfref.file_walk import FileWriteError, PathNotAllowed, resolve_target

    try:
        target = Path(resolve_target(file_path, roots))
    except (PathNotAllowed, FileWriteError):
        return None  # the write itself reports the path problem
    return target if os.path.lexists(target) else None


def _tagged(record: dict, kind: str) -> dict:
    return record if "t" in record else {"t": kind, **record}


_HANDLERS: dict[str, Callable[[dict[str, Any], ToolContext], Awaitable[str]]] = {
    "remember": _remember,
    "forget": _forget,
    "compact": _compact,
    "inspect_context": _inspect,
    "search_history": _search_history,
    "read_history": _read_history,
    "fork_spawn": _fork_spawn,
    "fork_gather_all": _fork_gather,
    "list_refs": _list_refs,
    "get_ref": _get_ref,
    "read_fd": _read_fd,
    "fd_to_file": _fd_to_file,
}
_FORK_NAMES = frozenset({"fork_spawn", "fork_gather_all"})
