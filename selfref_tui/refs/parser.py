"""Streaming parser for ``<ref id="…">…</ref>`` blocks in model output.

Why streaming: the app shows refs (boxed, with their id) while the answer is
still arriving, so the parser is fed provider chunks of any size — one
character at a time, tags split anywhere — and hands back display segments as
soon as they are certain. Only a possible partial tag (bounded, see
``MAX_TAG_LEN``) and one newline that may belong to a closing tag are held
back; nothing is ever rescanned, so total work is linear in the message length.

Grammar (every rule has a test in tests/refs/test_parser.py):

* Opening tag: ``<ref`` + whitespace + attributes + optional whitespace + ``>``.
  Attributes are ``name="value"`` or ``name='value'`` (whitespace allowed around
  ``=``); exactly one must be ``id``; others may come before or after it and are
  ignored. Values may not contain ``<`` or ``>``. Tag name is lower-case ``ref``.
* ID: ASCII letters, digits, ``_ . -``; 1–64 characters (they become file names).
* Closing tag: ``</ref>`` (whitespace allowed before ``>``).
* A tag is at most ``MAX_TAG_LEN`` characters and never spans a line break.
  Anything that does not match — ``<ref id=x>``, ``<ref id="a b">``,
  ``<ref id="a"/>``, a stray ``</ref>`` — is plain text, never an error.
* Adjacent refs (``</ref><ref id="b">``) both count. Nested refs both count
  (up to ``MAX_DEPTH`` levels; deeper opening tags are text); the innermost
  open ref is closed first; the outer ref's content is its text without the
  inner tags.
* A ref still open at ``finish()`` is not stored; its id is in ``unclosed``
  (outermost first). No ``ref_close`` segment is produced for it.
* Whitespace is kept verbatim, except that the single newline right after an
  opening tag and the single newline right before a closing tag belong to the
  tag (so ``<ref id="x">\\ncode\\n</ref>`` stores ``code``). Only ``\\n`` counts.
  This holds for display segments too, so a ref's content is exactly the
  concatenation of the ``ref_text`` segments between its open and close.
* Quoted refs: :func:`quote_refs` writes a stored message's ref tags as
  ``<quoted_ref id="…">…</quoted_ref>``, which this grammar never reads as a
  ref, so text recalled from history can be repeated without defining anything.
* Fenced code blocks: a line whose first non-blank characters are three or
  more backticks or tildes opens a fence (for backticks, the rest of the line
  may not contain a backtick); a line with the same character, at least as
  many, and only whitespace after closes it. Any indentation is accepted
  (models indent fences inside list items), unlike CommonMark's three spaces.
  The position right after an opening ``<ref>`` tag counts as a line start, so
  ``<ref id="x">```py`` opens a fence.
  - A fence opened outside every ref makes all tags literal until it closes
    (an unclosed fence runs to the end of the message, as in CommonMark).
  - A fence opened inside a ref keeps tags literal too, but it cannot swallow
    its ref: literal opening tags inside it are counted, and a ``</ref>`` that
    is not balancing one of them ends the fence and closes the ref. So a ref
    wrapping a fence works, even when the model forgets the closing fence or
    writes ```` ```</ref> ````, while a fence that *shows* ``<ref>`` syntax
    keeps it as text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MAX_TAG_LEN = 256
MAX_DEPTH = 16

_ID_RE = r"[A-Za-z0-9_.\-]{1,64}"
_ATTR_RE = re.compile(r"""\s+([A-Za-z_:][A-Za-z0-9_:.\-]*)\s*=\s*(?:"([^"<>]*)"|'([^'<>]*)')""")
_OPEN_RE = re.compile(
    r"""<ref((?:\s+[A-Za-z_:][A-Za-z0-9_:.\-]*\s*=\s*(?:"[^"<>]*"|'[^'<>]*'))+)\s*>"""
)
_CLOSE_RE = re.compile(r"</ref\s*>")
_ID_FULL = re.compile(_ID_RE)
_SPECIAL = re.compile(r"[<\n]")

# line phases for fence detection
_INDENT, _RUN, _REST, _OTHER = range(4)


@dataclass(frozen=True)
class Segment:
    """A piece of the message for display; ``depth`` is the ref nesting level."""

    kind: str  # "text" | "ref_open" | "ref_text" | "ref_close"
    text: str = ""
    ref_id: str | None = None
    depth: int = 0


@dataclass(frozen=True)
class Ref:
    id: str
    content: str


@dataclass
class _Open:
    id: str
    start: int  # index into the parser's piece list where this ref's text starts


def _open_tag_id(tag: str) -> str | None:
    """The id of a well-formed opening tag, else None."""
    m = _OPEN_RE.fullmatch(tag)
    return tag_id(m.group(1)) if m else None


def tag_id(attributes: str) -> str | None:
    """The id an opening tag's ``attributes`` give: exactly one, well formed; else None
    (a quoted ref's tag is read by the same rule, see ``refs/quoted.py``)."""
    ids = [a.group(2) if a.group(2) is not None else a.group(3)
           for a in _ATTR_RE.finditer(attributes) if a.group(1) == "id"]
    if len(ids) != 1 or not _ID_FULL.fullmatch(ids[0]):
        return None
    return ids[0]


def _viable(cand: str) -> bool:
    """Could ``cand`` still grow into a tag? Lets plain ``<`` show at once."""
    if cand.startswith("</"):
        if len(cand) <= 5:
            return "</ref".startswith(cand)
        return cand[5:].isspace()
    if len(cand) <= 4:
        return "<ref".startswith(cand)
    return cand[4].isspace()


@dataclass
class StreamingRefParser:
    """Feed chunks, get display segments; completed refs collect in ``refs``."""

    refs: list[Ref] = field(default_factory=list)
    unclosed: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stack: list[_Open] = []
        self._pieces: list[str] = []  # ref text of the current outermost ref
        self._cand: str | None = None  # possible tag being read
        self._pending_nl = False  # newline that may precede a closing tag
        self._skip_nl = False  # just after an opening tag
        self._acc: list[str] = []  # display text not yet turned into a segment
        self._out: list[Segment] = []
        self._finished = False
        # line state (fence detection)
        self._phase = _INDENT
        self._run_char = ""
        self._run_len = 0
        self._rest_tick = False
        self._rest_blank = True
        # open fence
        self._fence_char = ""
        self._fence_len = 0
        self._fence_balance = 0

    # -- public ---------------------------------------------------------
    @property
    def depth(self) -> int:
        return len(self._stack)

    def feed(self, chunk: str) -> list[Segment]:
        if self._finished:
            raise RuntimeError("parser already finished; make a new StreamingRefParser")
        i, n = 0, len(chunk)
        while i < n:
            if self._cand is not None:
                self._cand_char(chunk[i])
                i += 1
                continue
            tags_live = self._fence_len == 0 or self._stack
            if tags_live:
                m = _SPECIAL.search(chunk, i)
                j = m.start() if m else n
            else:
                j = chunk.find("\n", i)
                if j < 0:
                    j = n
            if j > i:
                self._plain(chunk[i:j])
                i = j
            if i < n:
                if chunk[i] == "\n":
                    self._newline()
                else:
                    self._cand = "<"
                i += 1
        return self._drain()

    def finish(self) -> list[Segment]:
        if self._finished:
            return []
        if self._cand is not None:
            cand, self._cand = self._cand, None
            self._plain(cand)
        if self._pending_nl:
            self._pending_nl = False
            self._emit("\n")
        self._finished = True
        self.unclosed = [o.id for o in self._stack]
        return self._drain()

    # -- candidate tags -------------------------------------------------
    def _cand_char(self, c: str) -> None:
        cand = self._cand
        assert cand is not None
        if c == ">":
            self._cand = None
            self._tag(cand + ">")
            return
        if c in "<\n" or len(cand) >= MAX_TAG_LEN - 1 or not _viable(cand + c):
            self._cand = None
            self._plain(cand)
            if c == "<":
                self._cand = "<"
            elif c == "\n":
                self._newline()
            else:
                self._plain(c)
            return
        self._cand = cand + c

    def _tag(self, tag: str) -> None:
        if _CLOSE_RE.fullmatch(tag):
            if self._fence_len:
                if self._fence_balance:
                    self._fence_balance -= 1
                    self._plain(tag)
                    return
                self._fence_len = 0  # the fence cannot outlive its ref
            if self._stack:
                self._close()
            else:
                self._plain(tag)
            return
        ref_id = _open_tag_id(tag)
        if ref_id is None or len(self._stack) >= MAX_DEPTH:
            self._plain(tag)
        elif self._fence_len:
            self._fence_balance += 1
            self._plain(tag)
        else:
            self._open(ref_id)

    def _open(self, ref_id: str) -> None:
        if self._pending_nl:
            self._pending_nl = False
            self._emit("\n")
        self._flush()
        self._stack.append(_Open(ref_id, len(self._pieces)))
        self._out.append(Segment("ref_open", ref_id=ref_id, depth=len(self._stack)))
        self._skip_nl = True
        self._line_start()

    def _close(self) -> None:
        self._pending_nl = False
        self._skip_nl = False
        self._flush()
        depth = len(self._stack)
        opened = self._stack.pop()
        self.refs.append(Ref(opened.id, "".join(self._pieces[opened.start:])))
        if not self._stack:
            self._pieces.clear()
        self._out.append(Segment("ref_close", ref_id=opened.id, depth=depth))
        self._phase = _OTHER

    # -- text -----------------------------------------------------------
    def _plain(self, s: str) -> None:
        """Text without newlines: track the line for fences, then show it."""
        if self._phase != _OTHER:
            self._track(s)
        self._skip_nl = False
        if self._pending_nl:
            self._pending_nl = False
            s = "\n" + s
        self._emit(s)

    def _newline(self) -> None:
        self._end_line()
        if self._skip_nl:
            self._skip_nl = False
        elif self._stack:
            if self._pending_nl:
                self._emit("\n")
            self._pending_nl = True
        else:
            self._emit("\n")

    def _emit(self, s: str) -> None:
        self._acc.append(s)
        if self._stack:
            self._pieces.append(s)

    def _flush(self) -> None:
        if not self._acc:
            return
        text = "".join(self._acc)
        self._acc.clear()
        if self._stack:
            self._out.append(Segment("ref_text", text, self._stack[-1].id, len(self._stack)))
        else:
            self._out.append(Segment("text", text))

    def _drain(self) -> list[Segment]:
        self._flush()
        out, self._out = self._out, []
        return out

    # -- fences ---------------------------------------------------------
    def _line_start(self) -> None:
        self._phase = _INDENT
        self._run_len = 0
        self._rest_tick = False
        self._rest_blank = True

    def _track(self, s: str) -> None:
        for c in s:
            phase = self._phase
            if phase == _INDENT:
                if c in " \t":
                    continue
                if c in "`~":
                    self._run_char, self._run_len, self._phase = c, 1, _RUN
                else:
                    self._phase = _OTHER
                    return
            elif phase == _RUN:
                if c == self._run_char:
                    self._run_len += 1
                elif self._run_len >= 3:
                    self._phase = _REST
                    self._rest_char(c)
                else:
                    self._phase = _OTHER
                    return
            elif phase == _REST:
                self._rest_char(c)
                if self._phase == _OTHER:
                    return
            else:
                return

    def _rest_char(self, c: str) -> None:
        if c == "`":
            self._rest_tick = True
        if not c.isspace():
            self._rest_blank = False
        can_open = not self._fence_len and not (self._run_char == "`" and self._rest_tick)
        can_close = bool(self._fence_len) and self._rest_blank
        if not (can_open or can_close):
            self._phase = _OTHER

    def _end_line(self) -> None:
        if self._phase in (_RUN, _REST) and self._run_len >= 3:
            if not self._fence_len:
                if not (self._run_char == "`" and self._rest_tick):
                    self._fence_char, self._fence_len = self._run_char, self._run_len
                    self._fence_balance = 0
            elif (self._run_char == self._fence_char and self._run_len >= self._fence_len
                  and self._rest_blank):
                self._fence_len = 0
                self._fence_balance = 0
        self._line_start()


def parse_refs(text: str) -> list[Ref]:
    """All completed refs of a whole message, in closing order."""
    parser = StreamingRefParser()
    parser.feed(text)
    parser.finish()
    return parser.refs


#: the tag a ref block of recalled history is shown with (see :func:`quote_refs`)
QUOTED_TAG = "quoted_ref"
#: every ``<ref`` or ``</ref`` that could begin a tag of the grammar above
_TAG_START = re.compile(r"<(/?)ref(?=[\s>])")


def quote_refs(text: str) -> str:
    r"""``text`` with every ref tag written as a ``quoted_ref`` tag, attributes kept.

    Why: a message read back from history (``read_history``, ``search_history``,
    a summary's verbatim words) holds the ref blocks the model wrote then. A
    model that repeats what it read would otherwise define those refs again,
    and an id it copies with cut or changed content would supersede the real
    one. ``<quoted_ref id="x">`` still names the ref and shows its content, but
    no parser state reads it as a tag. Tags inside fenced code are rewritten
    too: one rule the model can be told, and idempotent.

    >>> quote_refs('<ref id="x">\ncode\n</ref>')
    '<quoted_ref id="x">\ncode\n</quoted_ref>'
    """
    if "<ref" not in text and "</ref" not in text:
        return text
    return _TAG_START.sub(rf"<\1{QUOTED_TAG}", text)


#: a quoted ref's opening tag, also as it reads XML-escaped (an fd's preview or page)
_QUOTED_OPEN = re.compile(
    r"""(?:<|&lt;)quoted_ref((?:\s+[A-Za-z_:][A-Za-z0-9_:.\-]*\s*=\s*(?:"[^"<>]*"|'[^'<>]*'))+)"""
)


def quoted_ids(text: str) -> set[str]:
    """The ids of the quoted refs in ``text`` (see :func:`quote_refs`)."""
    if "quoted_ref" not in text:
        return set()
    ids = set()
    for tag in _QUOTED_OPEN.finditer(text):
        for attr in _ATTR_RE.finditer(tag.group(1)):
            value = attr.group(2) if attr.group(2) is not None else attr.group(3)
            if attr.group(1) == "id" and _ID_FULL.fullmatch(value):
                ids.add(value)
    return ids
