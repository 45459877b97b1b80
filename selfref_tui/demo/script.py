"""What the demo server answers: scripted steps for tests and the offline demo model.

A *script* is either a list of steps served one per request, in order, or a
callable ``(request_body, call_index) -> step`` that picks an answer from the
conversation. Tests use lists (exact, reproducible failures); the demo model
(:data:`DEMO_SCRIPT`) is a callable so that a person can type anything.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from selfref_tui.context.images import image_urls
from selfref_tui.safety import one_line

DEMO_TAG = "[demo model]"


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model makes; ``arguments`` as a dict is JSON-encoded on the wire."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    def arguments_json(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)


@dataclass(frozen=True)
class Reply:
    """A normal answer: optional reasoning, text and tool calls, streamed in small chunks.

    ``chunk_chars`` None splits text into word-sized tokens; an int cuts fixed-size
    pieces (handy to split ``<ref id=`` across chunks). ``tokens_per_s`` overrides the
    server's pace for this step. ``interleave`` sends tool-call argument pieces
    round-robin across calls, as some servers do.
    """

    text: str = ""
    tool_calls: Sequence[ToolCall] = ()
    reasoning: str = ""
    chunk_chars: int | None = None
    tokens_per_s: float | None = None
    interleave: bool = True
    finish_reason: str | None = None
    usage: dict[str, int] | None = None

    @property
    def finish(self) -> str:
        if self.finish_reason:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"


@dataclass(frozen=True)
class HttpError:
    """An error status with OpenAI-shaped error JSON (``headers`` e.g. Retry-After)."""

    status: int
    message: str = "demo server error"
    headers: dict[str, str] = field(default_factory=dict)
    code: str | None = None
    type: str = "server_error"


@dataclass(frozen=True)
class Drop:
    """Stream ``text`` then cut the connection without finishing the response."""

    text: str = ""
    chunk_chars: int | None = None


@dataclass(frozen=True)
class Malformed:
    """Stream ``text_before`` then a data line that is not JSON."""

    text_before: str = ""
    payload: str = '{"choices": [ {"delta": '


@dataclass(frozen=True)
class Events:
    """Stream these ``data:`` payloads exactly as given, one event each, then ``[DONE]``.

    For odd and hostile streams (escapes, interleaved calls, bad JSON) that the
    other steps never send; nothing is added, not even the usual first event.
    """

    payloads: tuple[str, ...] = ()


@dataclass(frozen=True)
class Stall:
    """Stream ``text_before``, set ``reached``, wait for ``event``, then send ``text_after``.

    Tests hold the answer mid-stream with it (to press Esc / fire an abort); a
    client that disconnects while stalled is noticed at once.
    """

    event: asyncio.Event
    text_before: str = ""
    text_after: str = ""
    reached: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass(frozen=True)
class Overflow:
    """The request does not fit a ``window``-token context, refused as real servers do.

    ``style="llama-cpp-python"``: a streamed request gets a 200 and an empty
    stream (its server reads the prompt after the headers went out; the error
    is only in its log), a non-streamed one gets 400 ``context_length_exceeded``
    with "This model's maximum context length is …". ``style="vllm"``: a 400
    with vLLM's text whatever the request.
    """

    window: int = 1024
    tokens: int = 2048
    style: str = "llama-cpp-python"

    def error(self) -> HttpError:
        if self.style == "vllm":
            return HttpError(400, f"This model's maximum context length is {self.window} "
                             f"tokens. However, you requested {self.tokens} tokens in the "
                             "messages, Please reduce the length of the messages.",
                             type="BadRequestError")
        return HttpError(400, f"This model's maximum context length is {self.window} tokens. "
                         f"However, you requested {self.tokens} tokens ({self.tokens} in the "
                         "messages, None in the completion). Please reduce the length of the "
                         "messages or completion.", code="context_length_exceeded",
                         type="invalid_request_error")


@dataclass(frozen=True)
class Hang:
    """Accept the request and send nothing until ``event`` (never, if it is not set).

    ``headers=True`` sends the 200 and the SSE headers first, as servers that
    stream do before the model has read the prompt; False sends not a byte.
    """

    event: asyncio.Event = field(default_factory=asyncio.Event)
    headers: bool = True


@dataclass(frozen=True)
class Echo:
    """Answer with the text of the request's last tool result, as a model repeats
    what it just read (recalled history, say): ``before`` it, cut after the first
    ``until`` when given (a model that copies part of it), ``after`` it (one that
    closes what it cut, ``</ref>``). The server makes it a :class:`Reply` from the
    request it answers.
    """

    before: str = ""
    until: str = ""
    after: str = ""

    def reply(self, body: dict) -> Reply:
        """The answer to ``body``: its last tool message's text, shaped as above."""
        messages = body.get("messages") or []
        result = _text_of(_last(messages, "tool"))
        if self.until and self.until in result:
            result = result[: result.index(self.until) + len(self.until)]
        return Reply(text=self.before + result + self.after)


Step = Reply | HttpError | Drop | Malformed | Events | Stall | Overflow | Hang | Echo
ScriptFn = Callable[[dict, int], Step]
Script = Sequence[Step] | ScriptFn


# --------------------------------------------------------------------------- demo model

_FIB_CODE = '''def fib_recursive(n: int) -> int:
    """The textbook definition: exponential time, fine for small n."""
    if n < 2:
        return n
    return fib_recursive(n - 1) + fib_recursive(n - 2)
'''

_FIB_ITER = '''def fib_iterative(n: int) -> int:
    """Linear time, constant memory."""
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a
'''

HELP_TEXT = f"""{DEMO_TAG} Hello! I am the offline demo model of selfref-tui: no network, \
no API key, every answer is scripted so you can see what the app does. Try one of these:

- **"show me some code"** — an answer with `<ref>` blocks (code and prose) you can export
- **"remember that I like Python"** — I call `remember`; watch the experiences panel
- **"forget that"** — I call `forget` on a stored experience
- **"fork two helpers"** — I spawn two child agents with `fork_spawn`, then `fork_gather_all`
- **"compact the context"** — I call `compact` with a structured summary
- **"what did I say about WORDS?"** (or "search the history for WORDS") — I call \
`search_history`, then `read_history` on the oldest match, even over compacted messages
- **"write something long"** — a long, paced answer: press **Esc** to stop it midway
- **"what time is it"** — I call a configured MCP time server (`mcp-server-time`)
- **"write the code to a file"** — I call `fd_to_file` with a ref; rewind past it to put the \
file back

Point the app at a real model with `--base-url` and `--model` (see the README)."""

#: the answer to anything else once the help above is in the conversation: a long
#: conversation with the demo model is not the same 26 lines after every message
NOTED_TEXT = (f"{DEMO_TAG} Noted. I am the offline demo model: I act only on the prompts "
              "listed earlier (say \"help\" to see them again).")

#: a greeting or a request for help: the list of prompts, every time
_HELP_ASKED = re.compile(r"(?:help|hi|hello|hey|what can you do)\b[\s?!.]*", re.IGNORECASE)

#: a question about something said earlier: the demo searches the history for it
_RECALL = re.compile(
    r"\b(?:what did (?:i|we|you) (?:say|said|decide|write|tell you|agree|choose|pick|ask)"
    r"|do you remember|remind me)\b(?P<about>.*)", re.IGNORECASE | re.DOTALL)
#: words of such a question that are not what it is about
_FILLER = frozenset({
    "a", "about", "again", "an", "and", "at", "before", "did", "do", "earlier", "for", "from",
    "i", "in", "is", "it", "me", "my", "of", "on", "our", "regarding", "said", "say", "start",
    "that", "the", "this", "to", "us", "was", "we", "what", "you"})


def _long_text() -> str:
    topics = [
        "how the context is compiled from patches",
        "why every edit is an append to a log",
        "what experiences are and why they survive compaction",
        "how refs turn parts of an answer into named, exportable blocks",
        "how forks run child agents on a snapshot of the parent",
        "what happens when you press Esc in the middle of a stream",
    ]
    parts = [f"{DEMO_TAG} Here is a long answer, paced like a real model. Press Esc at any time: "
             "the partial text is kept and marked as truncated.\n"]
    for number, topic in enumerate(topics * 4, start=1):
        parts.append(
            f"\n### Part {number}: {topic}\n\n"
            f"This paragraph is about {topic}. The demo model writes it slowly so that you "
            "can watch the stream arrive token by token, scroll up while it keeps going, and "
            "interrupt it. Nothing here is generated: the text is scripted inside the package, "
            "and the server streams it in small chunks over real HTTP, through the same OpenAI "
            "client path a real provider uses. When you stop it, the answer so far is saved "
            "with a truncation marker, the transcript stays valid, and your next message "
            "starts a normal turn.\n"
        )
    return "".join(parts)


def _last(messages: list[dict], role: str) -> dict | None:
    for message in reversed(messages):
        if message.get("role") == role:
            return message
    return None


def _text_of(message: dict | None) -> str:
    if not message:
        return ""
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def _image_types(message: dict | None) -> list[str]:
    """The types of the images a message carries (``image/png``…), in order."""
    content = message.get("content") if message else None
    return [url.split(";", 1)[0].removeprefix("data:") or "an image"
            for url in image_urls(content)]


def _tool_names(body: dict) -> set[str]:
    return {t.get("function", {}).get("name", "") for t in body.get("tools") or []}


def _after_tools(messages: list[dict], tools: set[str]) -> Step:
    """A brief answer about the tool results that just came back (or the next call)."""
    assistant = _last(messages, "assistant") or {}
    called = [c.get("function", {}).get("name", "") for c in assistant.get("tool_calls") or []]
    results = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        results.insert(0, _text_of(message))
    first = results[0] if results else ""
    if "fork_spawn" in called and "fork_gather_all" in tools:
        return Reply(
            text=f"{DEMO_TAG} Both helpers are running; gathering their answers.",
            tool_calls=[ToolCall("fork_gather_all", {"include_history": False})],
        )
    if "fork_gather_all" in called:
        return Reply(text=f"{DEMO_TAG} The helpers are done. Their answers, in short:\n\n"
                     f"{_fork_lines(first)}")
    if "remember" in called:
        exp_id = _json_field(first, "experience_id")
        if exp_id:
            return Reply(text=f"{DEMO_TAG} Stored it as {exp_id}. It is now part of my "
                         "system prompt and survives compaction.")
        return Reply(text=f"{DEMO_TAG} I could not store it. The remember tool answered: "
                     f"{one_line(first, 400)}")
    if "forget" in called:
        exp_id = _json_field(first, "experience_id")
        if exp_id:
            return Reply(text=f"{DEMO_TAG} Forgot {exp_id}: it is gone from my system prompt.")
        return Reply(text=f"{DEMO_TAG} The forget tool answered: {one_line(first, 120)}")
    if "compact" in called:
        if _json_field(first, "status") == "cancelled":  # the person's review said no
            return Reply(text=f"{DEMO_TAG} You cancelled the compaction: the conversation "
                         "stays as it is.")
        return Reply(text=f"{DEMO_TAG} Compaction queued: the transcript is replaced by the "
                     "structured summary at the next step.")
    if "fd_to_file" in called:
        wrote = dict(re.findall(r'(\w+)="([^"]*)"', first)) if first.startswith(
            "<fd_to_file_result") else {}
        if wrote.get("path"):
            # said as a person says it: the tool's XML line was quoted as it came
            fence = " (its code fence left out)" if wrote.get("fence") == "removed" else ""
            said = (f"Wrote {wrote.get('fd', 'the ref')} to {wrote['path']}: "
                    f"{wrote.get('chars', '?')} characters{fence}.")
        else:
            # nothing was written (the file was kept, the path refused): no file to put back
            return Reply(text=f"{DEMO_TAG} The fd_to_file tool answered: "
                         f"{one_line(first, 300)}")
        return Reply(text=f"{DEMO_TAG} {one_line(said, 400)}\n\n"
                     "Rewind to before your message (Esc Esc) and the app offers to put the "
                     "file back as it was.")
    if any(name.endswith("__get_current_time") for name in called):
        when = _json_field(first, "datetime") or one_line(first, 200)
        return Reply(text=f"{DEMO_TAG} The MCP time server says it is {when}.")
    if "search_history" in called:
        lines = first.splitlines()
        # the oldest match: the newest is often the question that asked for the search
        hit = re.match(r"#(\d+) ", lines[-1]) if len(lines) > 1 else None
        if hit and "read_history" in tools:
            # the first sentence: the rest of the line tells the model how to read on
            said = one_line(lines[0].split(". ", 1)[0].rstrip("."), 120)
            return Reply(text=f"{DEMO_TAG} {said}. Reading the oldest in full.",
                         tool_calls=[ToolCall("read_history",
                                              {"start": int(hit.group(1)), "count": 1})])
        return Reply(text=f"{DEMO_TAG} The history search answered: {one_line(first, 200)}")
    if "read_history" in called:
        return Reply(text=f"{DEMO_TAG} Here it is, word for word from the store:\n\n"
                     f"{_quoted(first, 600)}")
    return Reply(text=f"{DEMO_TAG} The tool answered: {one_line(first, 200)}")


def _focused(messages: list[dict], focus: str, most: int = 5) -> list[str]:
    """The person's messages that hold words of ``focus`` (``/compact FOCUS``), for the
    summary: the most words first, at most ``most``, in the order they were sent. The
    demo's summary was the same whatever the focus said."""
    words = {w.lower() for w in re.findall(r"\w{4,}", focus)} - _FILLER - {"keep", "with"}
    # the runtime's notes (merged into a person's message on strict servers) are not theirs
    said = [(i, _text_of(m).split("[selfref-tui runtime]", 1)[0].strip())
            for i, m in enumerate(messages) if m.get("role") == "user"]
    scored = [(sum(w in text.lower() for w in words), i, text) for i, text in said
              if text and not text.startswith("[Context summary]")]
    best = sorted((hit for hit in scored if hit[0]), key=lambda hit: (-hit[0], hit[1]))[:most]
    return [f"The person said: {one_line(text, 160)}" for _, _, text in sorted(
        best, key=lambda hit: hit[1])]


def _quoted(text: str, limit: int) -> str:
    """``text`` (cut at ``limit``) in a fence longer than any backtick run inside it.

    Inside a fence a ``<ref>`` tag is literal: quoting a stored message that
    held refs must not write those refs again (flattened or cut short).
    """
    cut = text if len(text) <= limit else text[: limit - 1] + "…"
    longest = max((len(run) for run in re.findall(r"`+", cut)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{cut}\n{fence}"


def _json_field(text: str, name: str) -> str:
    try:
        value = json.loads(text)
    except ValueError:
        return ""
    return str(value.get(name, "")) if isinstance(value, dict) else ""


def _fork_lines(text: str) -> str:
    """One line per child from fork_gather_all's JSON, or the raw text clipped."""
    try:
        value = json.loads(text)
    except ValueError:
        return one_line(text, 600)
    if not isinstance(value, dict):
        return one_line(text, 600)
    lines = []
    for fork_id, result in value.items():
        if isinstance(result, dict):
            answer = result.get("response") or result.get("error") or ""
            lines.append(f"- **{fork_id}** ({result.get('status', '?')}): {one_line(answer, 160)}")
    return "\n".join(lines) or one_line(text, 600)


def _refs_answer() -> Reply:
    text = (
        f"{DEMO_TAG} Two ways to compute Fibonacci numbers, each in a ref you can export "
        "(`selfref-tui refs export fib_iterative fib.py`):\n\n"
        f'<ref id="fib_recursive">\n```python\n{_FIB_CODE}```\n</ref>\n\n'
        f'<ref id="fib_iterative">\n```python\n{_FIB_ITER}```\n</ref>\n\n'
        '<ref id="fib_note">The recursive version recomputes the same values again and again, '
        "so its running time grows exponentially; the iterative one keeps only the last two "
        "numbers.</ref>\n\nRefs are named blocks: tools and the refs panel can reuse them."
    )
    return Reply(text=text)


def _file_answer(messages: list[dict]) -> Reply:
    """Write a ref of this conversation to a file with ``fd_to_file``, so a rewind's
    offer to put files back can be tried offline (``fib_iterative`` when it exists)."""
    ids = [ref_id for message in messages if message.get("role") == "assistant"
           for ref_id in re.findall(r'<ref id="([\w.-]+)">', _text_of(message))]
    if not ids:
        return Reply(text=f"{DEMO_TAG} There is no ref to write yet: ask me to \"show me some "
                     "code\" first.")
    ref_id = "fib_iterative" if "fib_iterative" in ids else ids[-1]
    name = f"{ref_id}.py" if ref_id.startswith("fib_") and ref_id != "fib_note" else ref_id
    return Reply(text=f"{DEMO_TAG} Writing ref:{ref_id} to {name}.",
                 tool_calls=[ToolCall("fd_to_file", {"fd": f"ref:{ref_id}", "file_path": name})])


def _time_answer(tools: set[str]) -> Reply:
    """Call a configured MCP server's time tool (``mcp-server-time``), so the whole MCP
    flow — approval, call, result — can be seen offline; without one, say how to add it."""
    clock = sorted(name for name in tools
                   if name.startswith("mcp__") and name.endswith("__get_current_time"))
    if clock:
        return Reply(text=f"{DEMO_TAG} Asking the time server.",
                     tool_calls=[ToolCall(clock[0], {"timezone": "UTC"})])
    return Reply(text=f"{DEMO_TAG} I have no clock. Configure an MCP time server and ask "
                 "again: add `[mcp.servers.time]` with `command = \"mcp-server-time\"` to "
                 "config.toml (`pip install mcp-server-time`), then restart.")


def demo_script(body: dict, call_index: int) -> Step:
    """The offline demo model: pick a scripted answer from the conversation."""
    messages = body.get("messages") or []
    tools = _tool_names(body)
    if messages and messages[-1].get("role") == "tool":
        return _after_tools(messages, tools)
    original = _text_of(_last(messages, "user"))
    prompt = original.lower()
    if "demo fork task" in prompt:
        task = original[prompt.index("demo fork task"):].split("\n", 1)[0]
        return Reply(text=f"{DEMO_TAG} (child agent) Done with “{one_line(task, 120)}”.")
    if "summary has replaced the earlier conversation" in prompt:
        # The runtime's note after a compaction, merged into the summary's user
        # message (strict servers get no two user messages in a row): the summary
        # speaks of compaction, but there is nothing left to do.
        return Reply(text=f"{DEMO_TAG} The context is compacted: the summary now stands in "
                     "for the earlier conversation, and every experience is kept.")
    found = re.search(r"search (?:the )?history for (.+)", original, re.IGNORECASE)
    if found and "search_history" in tools:
        query = found.group(1).strip(" .?!")
        return Reply(text=f"{DEMO_TAG} Searching every stored message for {query!r}.",
                     tool_calls=[ToolCall("search_history", {"query": query})])
    recall = _RECALL.search(original)
    if recall and "search_history" in tools:
        words = [w for w in re.findall(r"[\w.-]+", recall.group("about"))
                 if w.lower() not in _FILLER][:4]
        if not words:
            return Reply(text=f"{DEMO_TAG} About what? Ask \"what did I say about WORDS?\" "
                         "and I search the history for those words.")
        query = " ".join(words)
        return Reply(text=f"{DEMO_TAG} Let me look that up: searching every stored message "
                     f"for {query!r}.",
                     tool_calls=[ToolCall("search_history", {"query": query})])
    if "compact" in prompt and "compact" in tools:
        asked = re.search(r"The person asked the summary to focus on: (.+)", original)
        focus = one_line(asked.group(1).strip(), 200) if asked else ""
        return Reply(
            text=f"{DEMO_TAG} Compacting the conversation into a structured summary"
                 + (f", focused on {focus!r}." if focus else "."),
            tool_calls=[ToolCall("compact", {
                "goal": "Show what selfref-tui can do with the offline demo model",
                "instruction": "Keep answering demo requests briefly",
                "discoveries": ["The demo model is scripted and offline",
                                *_focused(messages, focus)],
                "completed": ["Explored the demo"],
                "current_status": "Context compacted on request"
                                  + (f", focused on: {focus}" if focus else ""),
                "likely_next_work": "Try refs, forks or Esc on a long answer",
                "relevant_files_directories": [],
                "remember": [],
            })],
        )
    if "forget" in prompt and "forget" in tools:
        system = _text_of(messages[0]) if messages else ""
        found = re.findall(r"exp_\d+", system)
        if not found:
            return Reply(text=f"{DEMO_TAG} There is nothing to forget yet: no experiences are "
                         "stored. Try \"remember that I like Python\" first.")
        return Reply(text=f"{DEMO_TAG} Forgetting {found[0]}.",
                     tool_calls=[ToolCall("forget", {"experience_id": found[0]})])
    if "remember" in prompt and "remember" in tools:
        # Slice the original text, not the lower-cased copy, so "I like Python" keeps its case.
        fact = original[prompt.index("remember") + len("remember"):].strip(" :.,!")
        fact = re.sub(r"^that\s+", "", fact, flags=re.IGNORECASE) or "the person tried the demo"
        return Reply(text=f"{DEMO_TAG} I will remember that.",
                     tool_calls=[ToolCall("remember", {"text": f"The person said: {fact}"})])
    if "fork" in prompt and "fork_spawn" in tools:
        return Reply(
            reasoning="Two independent sub-tasks: run them as children in parallel.",
            text=f"{DEMO_TAG} Spawning two helpers that work in parallel.",
            tool_calls=[
                ToolCall("fork_spawn", {"task": "Demo fork task A: name three uses of "
                                        "memoization", "instruction": "Answer in one line."}),
                ToolCall("fork_spawn", {"task": "Demo fork task B: explain tail calls in one "
                                        "sentence", "instruction": "Answer in one line."}),
            ],
        )
    if "fork" in prompt:
        return Reply(text=f"{DEMO_TAG} Fork tools are not available at this depth.")
    if re.search(r"\bwhat time\b|\btime is it\b|\bthe time\b", prompt):
        return _time_answer(tools)
    if prompt.startswith("[selfref-tui runtime]"):
        # The runtime's own prompt after a compaction: nothing left to do.
        return Reply(text=f"{DEMO_TAG} The context is compacted: the summary now stands in "
                     "for the earlier conversation, and every experience is kept.")
    kinds = _image_types(_last(messages, "user"))
    if kinds:
        count = f"{len(kinds)} image{'s' if len(kinds) > 1 else ''}"
        return Reply(text=f"{DEMO_TAG} I received {count} ({', '.join(kinds)}), but the "
                     "offline demo model cannot see pictures. A vision model would describe "
                     "it: gpt-4o, or llava and qwen2-vl through Ollama or vLLM (see the README).")
    if re.search(r"\b(?:to|in|into) a file\b", prompt) and "fd_to_file" in tools:
        return _file_answer(messages)
    # Whole words: "selfref" must not read as "ref".
    if re.search(r"\b(code|refs?|fib\w*|examples?)\b", prompt):
        return _refs_answer()
    if re.search(r"\b(long|essay|story|esc)\b", prompt):
        return Reply(text=_long_text())
    # the list is in the conversation, or was before a compaction summed it up
    helped = any("Try one of these" in _text_of(m) if m.get("role") == "assistant"
                 else _text_of(m).startswith("[Context summary]") for m in messages[:-1])
    if helped and not _HELP_ASKED.fullmatch(original.strip()):
        return Reply(text=NOTED_TEXT)
    return Reply(text=HELP_TEXT)


DEMO_SCRIPT: ScriptFn = demo_script
