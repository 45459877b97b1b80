"""The built-in tools' JSON schemas, as each request offers them.

Apart from the handlers (``builtin``) because they are data the model reads, not code
that runs: a long table of descriptions, written for the model (what the tool is for,
when to use it, what comes back), that changes when the wording does. ``batch`` offers
them (``tool_schemas``, ``TOOL_NAMES``); the demo server and the breakdown bench read
them too.
"""

from __future__ import annotations

from typing import Any

from ...context.summary import SEED_FIELDS


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
        list(SEED_FIELDS),
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
