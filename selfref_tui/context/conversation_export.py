"""A whole conversation as a file a person keeps: Markdown, or JSON.

Built from the key's numbered history (``MemoryKey.entries()``), so the
numbers are the ones the app, ``search`` and the recall tools use, and
nothing the model no longer sees (compacted) or was rewound is lost — those
messages are marked, not dropped.

Markdown: each message under a heading with its number, role and time; the
answer's text as it was written (Markdown already), with each ``<ref>``
turned into a visible ``**ref:ID**`` label (its end kept as a comment, so the
ids survive); tool calls as one line each and tool results as a short fenced
excerpt (the summary a reader needs; the whole is in the JSON); images
written beside the file and linked. JSON: the messages as stored, with their
number, time and flags.

Each compaction stands where it happened (``MemoryKey.compactions()``: the
markers the transcript shows as dividers), with the summary the model read
instead of the messages before it, as the transcript's divider shows it
(:func:`~.summary_text.summary_text`). Markdown: a ``Compacted (N messages
summarised)`` heading and the summary in a fence (inert: nothing in it renders
as Markdown, no control character is sent). JSON: an item ``{"n": null, "role":
"compaction", "time", "rewound", "summarised": N, "content": the summary's text,
"summary": the stored fields}``; ``n`` is null because numbers belong to messages
(the ones ``search``, ``history`` and the recall tools use), and a compaction is
not one.

Pure: the caller writes the text and the images (selfref/files.py, export_beside.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..safety.inert import inert, name_line, writable
from .history import EntryLike
from .history_reads import CompactionMark
from .images import EXTENSIONS, image_urls, parse_data_url, sniff_mime, text_of
from .local_time import SECOND_ZONE, shown_time
from .summary_text import summary_text
from .tool_errors import tool_failed

#: a tool result's excerpt in Markdown: at most this many lines and characters
RESULT_LINES = 12
RESULT_CHARS = 1_200
#: a tool call's arguments beyond this are cut in Markdown
ARGUMENT_CHARS = 300
FORMATS = ("md", "json")


@dataclass(frozen=True)
class ExportedImage:
    """An image to write beside the Markdown file: its name there, and its bytes."""

    name: str
    data: bytes


@dataclass
class Exported:
    """What an export writes: the text, and the images that go beside it."""

    text: str
    images: list[ExportedImage] = field(default_factory=list)


def suggested_name(key: str, fmt: str = "md") -> str:
    """``conversation-main.md``: a file name from the key that is safe anywhere."""
    from ..refs.export import safe_stem

    return f"conversation-{safe_stem(key)}.{fmt}"


def images_folder(file_name: str) -> str:
    """Where the images of an export named ``file_name`` go: ``NAME-images`` beside it."""
    stem = file_name.rsplit(".", 1)[0] if "." in file_name.lstrip(".") else file_name
    return f"{stem}-images"


def to_json(key: str, entries: Sequence[EntryLike], *,
            compactions: Sequence[CompactionMark] = (), now: str | None = None) -> str:
    """The messages as stored (images as ``data:`` URLs), numbered, timed and flagged
    (a tool result also says whether its call failed); each compaction where it
    happened (see the module's docstring)."""
    messages = [
        {
            "n": None,
            "role": "compaction",
            "time": e.time,
            "rewound": e.rewound,
            "summarised": e.summarised,
            "content": summary_text(e.summary),
            "summary": e.summary,
        } if isinstance(e, CompactionMark) else {
            "n": e.n,
            "role": e.role,
            "time": e.time,
            "rewound": bool(getattr(e, "rewound", False)),
            "compacted": bool(getattr(e, "compacted", False)),
            "pinned": bool(getattr(e, "pinned", False)),
            **({"error": tool_failed(e.message)} if e.role == "tool" else {}),
            "message": e.message,
        }
        for e in in_order(entries, compactions)
    ]
    body = {"key": key, "exported": now or _now(), "messages": messages}
    return json.dumps(body, ensure_ascii=False, indent=1) + "\n"


def to_markdown(key: str, entries: Sequence[EntryLike], *, images_dir: str | None,
                compactions: Sequence[CompactionMark] = (), now: str | None = None
                ) -> Exported:
    """The conversation as Markdown; ``images_dir`` None: images are named, not written
    (an export to stdout has nowhere beside it)."""
    out = _Markdown(images_dir)
    count = len(entries)
    compacted = len(compactions)
    out.lines += [
        f"# Conversation {name_line(key)}",  # "ma\u200bin" never reads as "main"
        "",
        f"{count} message{'s' if count != 1 else ''}"
        + (f" · {compacted} compaction{'s' if compacted != 1 else ''}" if compacted else "")
        + f" · exported {_short(now or _now())} · selfref-tui",
    ]
    for item in in_order(entries, compactions):
        if isinstance(item, CompactionMark):
            out.compaction(item)
        else:
            out.entry(item)
    # a lone surrogate (half an emoji's pair a server cut) has no UTF-8: as its escape
    return Exported(writable("\n".join(out.lines).rstrip("\n") + "\n"), out.images)


def in_order(entries: Sequence[EntryLike], compactions: Sequence[CompactionMark]
             ) -> Iterator[EntryLike | CompactionMark]:
    """The entries with each compaction before the first message numbered after it."""
    marks = iter(compactions)
    mark = next(marks, None)
    for entry in entries:
        while mark is not None and mark.after < entry.n:
            yield mark
            mark = next(marks, None)
        yield entry
    while mark is not None:
        yield mark
        mark = next(marks, None)


class _Markdown:
    def __init__(self, images_dir: str | None) -> None:
        self.images_dir = images_dir
        self.lines: list[str] = []
        self.images: list[ExportedImage] = []
        #: call id -> tool name, from the assistant messages met so far
        self.tools: dict[str, str] = {}

    def entry(self, entry: EntryLike) -> None:
        message = entry.message
        role = entry.role
        if role == "tool":
            name = self.tools.get(str(message.get("tool_call_id", "")), "")
            who = f"Tool result ({name})" if name else "Tool result"
        elif role == "user" and message.get("multimodal_for"):
            who = "Tool images"
        else:
            who = {"user": "You", "assistant": "Assistant"}.get(role, role.capitalize())
        flags = [flag for flag, on in (("rewound", getattr(entry, "rewound", False)),
                                       ("compacted", getattr(entry, "compacted", False)),
                                       # every compaction kept it word for word: the
                                       # reader of the export sees which ones
                                       ("pinned", getattr(entry, "pinned", False)),
                                       ("not sent: its turn failed", message.get("failed")),
                                       ("the call failed", role == "tool"
                                        and tool_failed(message)))
                 if on]
        head = f"## {entry.n} · {who} · {_short(entry.time)}"
        if flags:
            head += " · " + ", ".join(flags)
        self.lines += ["", head, ""]
        content = message.get("content")
        if role == "tool":
            self.result(text_of(content), bool(message.get("cancelled")))
        elif role == "assistant":
            self.answer(message)
        else:
            text = text_of(content)
            if text:
                self.lines.append(text)
        self.pictures(entry.n, content)

    def compaction(self, mark: CompactionMark) -> None:
        n = mark.summarised
        head = "## Compacted"
        if n:
            head += f" ({n} message{'' if n == 1 else 's'} summarised)"
        head += f" · {_short(mark.time)}" if mark.time else ""
        if mark.rewound:
            head += " · rewound"
        # the model's words, shown as written: a fence nothing in them closes, and no
        # control character (the summary is read text here; the JSON keeps it as stored)
        text = inert(summary_text(mark.summary))
        fence = _fence(text)
        self.lines += ["", head, "", "The model read this summary instead of the messages "
                       "before it:", "", f"{fence}text", text, fence]

    def answer(self, message: dict[str, Any]) -> None:
        reasoning = message.get("reasoning_details") or message.get("reasoning_content")
        if isinstance(reasoning, list):
            reasoning = "\n".join(str(r.get("text", "")) if isinstance(r, dict) else str(r)
                                  for r in reasoning)
        if reasoning:
            self.lines += ["<details><summary>Reasoning</summary>", "",
                           str(reasoning).strip(), "", "</details>", ""]
        text = text_of(message.get("content"))
        if text:
            self.lines.append(_with_ref_labels(text))
        if message.get("truncated"):
            reason = str(message.get("abort_reason") or "").strip()
            self.lines += ["", f"*[interrupted{': ' + reason if reason else ''}]*"]
        for call in message.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict):
                continue
            name = str(function.get("name", "tool"))
            self.tools[str(call.get("id", ""))] = name
            arguments = str(function.get("arguments", ""))
            if len(arguments) > ARGUMENT_CHARS:
                arguments = arguments[:ARGUMENT_CHARS] + "…"
            if self.lines[-1] and not self.lines[-1].startswith("→ calls"):
                self.lines.append("")  # below what was said, a blank line between
            self.lines.append(f"→ calls `{_inline(name)}` {_code_span(arguments)}  ")

    def result(self, text: str, cancelled: bool) -> None:
        lines = text.splitlines()
        shown = "\n".join(lines[:RESULT_LINES])
        if len(shown) > RESULT_CHARS:
            shown = shown[:RESULT_CHARS]
        fence = _fence(shown)
        self.lines += [f"{fence}text", shown, fence]
        left = len(text) - len(shown)
        if left > 0:
            more = len(lines) - len(shown.splitlines())
            self.lines.append(f"*… {more:,} more lines, {len(text):,} characters in all*"
                              if more > 0 else f"*… {left:,} more characters*")
        if cancelled:
            self.lines.append("*(cancelled)*")

    def pictures(self, n: int, content: Any) -> None:
        for k, url in enumerate(image_urls(content), 1):
            parsed = parse_data_url(url)
            if parsed is None:
                self.lines += ["", f"*[image not stored here: {_inline(url[:120])}]*"]
                continue
            data = parsed[1]
            mime = sniff_mime(data) or parsed[0]
            ext = EXTENSIONS.get(mime, "bin")
            name = f"{n}-{k}.{ext}"
            if self.images_dir is None:
                self.lines += ["", f"*[image {name}: {mime}, {len(data):,} bytes — export to "
                               "a file to have it written beside it]*"]
                continue
            self.images.append(ExportedImage(name, data))
            self.lines += ["", f"![image {n}.{k}]({self.images_dir}/{name})"]


def _with_ref_labels(text: str) -> str:
    """``<ref id="X">…</ref>`` as a visible ``**ref:X**`` label; the end as a comment."""
    if "<ref" not in text:
        return text
    from ..refs.parser import StreamingRefParser

    parser = StreamingRefParser()
    parts: list[str] = []
    for segment in [*parser.feed(text), *parser.finish()]:
        if segment.kind == "ref_open":
            parts.append(f"\x00**ref:{segment.ref_id}**\x00")
        elif segment.kind == "ref_close":
            parts.append(f"\x01<!-- end ref:{segment.ref_id} -->\x00")
        else:
            parts.append(segment.text.replace("\x00", "").replace("\x01", ""))
    # a label is a paragraph of its own: one blank line around it, whatever the text had
    joined = re.sub(r"(?:\n*\x00\n*)+", "\n\n", "".join(parts))
    return re.sub(r"\n*\x01", "\n", joined).strip("\n")


def _fence(text: str) -> str:
    """A backtick fence longer than any run of backticks in ``text``."""
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def _code_span(text: str) -> str:
    """``text`` as an inline code span whatever backticks it holds."""
    text = " ".join(text.split())
    if not text:
        return "`()`"
    longest = max((len(run) for run in _runs(text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _runs(text: str) -> list[str]:
    runs, current = [], ""
    for ch in text:
        if ch == "`":
            current += ch
        elif current:
            runs.append(current)
            current = ""
    if current:
        runs.append(current)
    return runs


def _inline(text: str) -> str:
    """One line of text for a heading (line breaks folded)."""
    return " ".join(str(text).split())


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _short(iso: str) -> str:
    """``2026-05-01T10:02:03.123+00:00`` → ``2026-05-01 12:02:03 CEST`` in Paris: the
    reader's clock, its zone named (the JSON export keeps the stored ISO time)."""
    return shown_time(iso, SECOND_ZONE)
