"""The tools the model can call, their JSON schemas and their handlers.

Descriptions are written for the model: what the tool is for, when to use it,
what comes back. Handlers take parsed arguments and a :class:`ToolContext`
(the turn's session, ref/fd table, fork manager, a way to ask the person) and
return the text the model sees. Errors a model can fix are returned as
:class:`ToolError` messages, never raised into the loop.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


class ToolError(Exception):
    """A problem the model should read and fix (bad argument, unknown id...)."""


def _fn(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


_STR_LIST = {"type": "array", "items": {"type": "string"}}

MEMORY_TOOLS: list[dict] = [
    _fn(
        "remember",
        "Store a durable experience: a fact about the person, the project or a lesson learned "
        "that must survive compaction and future sessions. It is shown in your system prompt "
        "from the next step on. Keep it to one short, self-contained sentence. Returns the "
        "experience id (e.g. exp_004).",
        {"text": {"type": "string", "description": "The fact to keep, one sentence."}},
        ["text"],
    ),
    _fn(
        "forget",
        "Remove a stored experience that is wrong or no longer useful, by its id as shown in "
        "the <experiences> block of your system prompt.",
        {"experience_id": {"type": "string", "description": "For example exp_002."}},
        ["experience_id"],
    ),
    _fn(
        "compact",
        "After these tool calls, replace the conversation with this summary; the runtime adds "
        "the person's messages and the last exchange verbatim, and all messages stay searchable "
        "(search_history). Call it when the context grows long or when asked. Be concrete.",
        {
            "goal": {"type": "string", "description": "The person's overall goal."},
            "instruction": {"type": "string", "description": "How the person wants the work done."},
            "discoveries": {**_STR_LIST, "description": "Facts learned so far."},
            "completed": {**_STR_LIST, "description": "What is done."},
            "current_status": {"type": "string", "description": "Where the work stands now."},
            "likely_next_work": {"type": "string", "description": "What to do next."},
            "relevant_files_directories": {**_STR_LIST, "description": "Paths that matter."},
            "errors_and_fixes": {**_STR_LIST, "description": "Errors met, and each fix."},
            "constraints_and_preferences": {**_STR_LIST,
                                            "description": "What the person asked or ruled out."},
            "pending_tasks": {**_STR_LIST, "description": "Asked for, not done yet."},
            "remember": {**_STR_LIST, "description": "Facts to keep as experiences too."},
        },
        [
            "goal",
            "instruction",
            "discoveries",
            "completed",
            "current_status",
            "likely_next_work",
            "relevant_files_directories",
        ],
    ),
    _fn(
        "inspect_context",
        "Look at your own context: the active memory key, stored experiences, the latest "
        "compaction summary, how many messages the working transcript holds, token usage against "
        "the context window and whether a compaction is pending.",
        {},
        [],
    ),
    _fn(
        "search_history",
        "Search every stored message of this conversation, compacted ones included, for all "
        "the words (any case) or \"quoted phrases\" given. Newest first: number, role, time, "
        "snippet.",
        {
            "query": {"type": "string"},
            "limit": {"type": "integer", "description": "Default 20."},
            "before": {"type": "integer", "description": "Only messages numbered below it."},
            "include_rewound": {"type": "boolean"},
        },
        ["query"],
    ),
    _fn(
        "read_history",
        "Read stored messages of this conversation verbatim by number, compacted ones "
        "included. Refs in the history show as <quoted_ref>: quoted, they define nothing.",
        {
            "start": {"type": "integer"},
            "count": {"type": "integer", "description": "Default 10."},
            "include_rewound": {"type": "boolean"},
        },
        ["start"],
    ),
]

FORK_TOOLS: list[dict] = [
    _fn(
        "fork_spawn",
        "Start a child agent on an independent sub-task. It starts from your context as it was "
        "before this message plus the task, runs concurrently with you and cannot change your "
        "context. Spawn several for parallel work, then call fork_gather_all to collect their "
        "answers. Returns {fork_id, status}.",
        {
            "task": {"type": "string", "description": "The sub-task, self-contained."},
            "instruction": {
                "type": "string",
                "description": "How to do it and what to return (format, length).",
            },
        },
        ["task", "instruction"],
    ),
    _fn(
        "fork_gather_all",
        "Wait for every child agent you spawned and return fork_id -> {status: "
        "completed|error|cancelled, response, error?, history?}.",
        {
            "include_history": {
                "type": "boolean",
                "description": "Also return each child's messages (large; default false).",
            }
        },
        [],
    ),
]

REF_TOOLS: list[dict] = [
    _fn(
        "list_refs",
        "List the <ref id=\"...\"> blocks you wrote in this conversation and the fd:N entries "
        "holding large tool outputs, with their sizes.",
        {},
        [],
    ),
    _fn(
        "get_ref",
        "Return the current content of one of your refs, by id (without the 'ref:' prefix).",
        {"ref_id": {"type": "string"}},
        ["ref_id"],
    ),
    _fn(
        "read_fd",
        "Read a file descriptor (fd:N, a large tool output) or a ref (ref:ID) page by page or by "
        "lines. Use extract_to_new_fd to copy a part into a new fd.",
        {
            "fd": {"type": "string", "description": "fd:N or ref:ID"},
            "page": {"type": "integer", "description": "1-based page number (default 1)."},
            "read_all": {"type": "boolean", "description": "Return everything at once."},
            "mode": {"type": "string", "enum": ["page", "line"]},
            "start": {"type": "integer", "description": "In line mode: 1-based first line."},
            "count": {"type": "integer", "description": "In line mode: number of lines."},
            "extract_to_new_fd": {"type": "boolean"},
        },
        ["fd"],
    ),
    _fn(
        "fd_to_file",
        "Write the content of an fd:N or ref:ID to a file inside the allowed directories. "
        "mode write replaces the file, append adds at the end, insert puts it before "
        "insert_at_line. Changing a file that already exists (any mode) always needs the "
        "person's yes: they are asked, whatever exist_ok says (exist_ok false refuses at once); "
        "when no one can be asked the file is kept and you get an error — write to a new path "
        "instead. A ref that is exactly one fenced code block is written as the bare code, "
        "without the ``` lines; pass raw true to keep the fence.",
        {
            "fd": {"type": "string", "description": "fd:N or ref:ID"},
            "file_path": {"type": "string"},
            "mode": {"type": "string", "enum": ["write", "append", "insert"]},
            "insert_at_line": {"type": "integer"},
            "exist_ok": {"type": "boolean"},
            "create": {"type": "boolean"},
            "raw": {"type": "boolean",
                    "description": "Keep a lone fenced block's fence lines (default false)."},
        },
        ["fd", "file_path"],
    ),
]


TOOL_NAMES = frozenset(
    t["function"]["name"] for t in (*MEMORY_TOOLS, *FORK_TOOLS, *REF_TOOLS)
)


def tool_schemas(*, forks: bool = True, refs: bool = True) -> list[dict]:
    """The tool list sent with each request (fork tools only below the depth limit)."""
    tools = list(MEMORY_TOOLS)
    if forks:
        tools += FORK_TOOLS
    if refs:
        tools += REF_TOOLS
    return tools


AskFn = Callable[[str, tuple[str, ...], str], Awaitable[str]]

#: a history with more than this many messages not indexed yet is indexed in a thread
THREAD_AT = 5_000
#: the ``compact`` error when nothing was added since the summary the model reads
JUST_COMPACTED = ("the conversation was compacted just now and nothing was added since: the "
                  "summary you read is current. Continue the work from it")


@dataclass
class HistoryRecall:
    """A key's search index (``context.recall.HistoryIndex``) and the lock that keeps two
    searches of one tool batch (or a search and :meth:`prepare`) from updating it at once.

    Taking in a long history is most of a first search's cost (~0.15 s at 100,000
    messages), and the first search the model makes is the one right after a
    compaction or soon after the key is opened: :meth:`prepare` does it then, in a
    thread, so the search finds it done.
    """

    index: Any = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    #: the thread taking in the history ahead of need, while it runs
    preparing: asyncio.Task[None] | None = None

    def __post_init__(self) -> None:
        if self.index is None:
            from ...context.recall import HistoryIndex

            self.index = HistoryIndex()

    def worth_preparing(self, memory: Any) -> bool:
        """Whether ``memory`` has a long history out of the model's view (compacted or
        rewound) that is not indexed yet: what the model would search first."""
        out_of_view = (getattr(memory, "last_compacted", 0)
                       or getattr(memory, "last_rewind", None) is not None)
        return bool(out_of_view) and self.index.behind(memory) > THREAD_AT

    def prepare(self, memory: Any) -> asyncio.Task[None] | None:
        """Index ``memory``'s history in a thread, now, when it is worth it (see
        :meth:`worth_preparing`); the task doing it (None: nothing to do). Needs a
        running event loop."""
        if self.preparing is not None and not self.preparing.done():
            return self.preparing
        if not self.worth_preparing(memory):
            return None
        self.preparing = asyncio.get_running_loop().create_task(self.catch_up(memory))
        return self.preparing

    async def catch_up(self, memory: Any) -> None:
        """Bring the index up to ``memory``'s messages; a long way in a thread, so the
        app keeps drawing. Numbers up to today's last only: their messages are complete,
        whatever the loop commits meanwhile."""
        async with self.lock:
            if self.index.behind(memory) > THREAD_AT:
                await asyncio.to_thread(self.index.extend, memory, memory.last_number)


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
    from ...selfref.files import FileWriteError, fd_to_file, refuse_read_only

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
    from ...selfref.files import FileWriteError, PathNotAllowed, resolve_target

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
