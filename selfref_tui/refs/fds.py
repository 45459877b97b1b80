"""Refs (``ref:ID``) and file descriptors (``fd:N``): the model's handles on content.

Why a table of its own: large tool outputs must not flood the context, and the
model needs to page through them, copy parts, and export its own refs — with
the same tools for both. The table is pure: it starts from the store's plain
dicts, answers with XML strings, and hands new entries back as plain record
dicts that the runtime persists (``{"t": "ref"|"fd", ...}``).

Decisions, each tested in tests/refs/test_fds.py:

* Pages are plain character slices of ``page_size`` (default 4,000). The page
  count is ``max(1, ceil(chars / page_size))`` and page *k* is
  ``content[(k-1)*size : k*size]``: one formula for both, so nothing is ever
  unreachable (a 10,000-character single line is three pages). A page size
  below 1 is refused when the table is built, so paging cannot loop.
* Line and char modes take a 1-based ``start`` and an optional ``count``
  (default: to the end). Lines are split on ``\\n`` only and keep it, so the
  slices put back together give the content exactly. A start or count that is
  not positive, or a range past the end, is an error naming the valid range —
  never a silently shortened slice.
* Ids are never reused, across forks either: a table has a ``namespace``; the
  root table numbers ``fd:1, fd:2, …``; ``child("3")`` numbers ``fd:3.1, …``
  and its child ``child("2")`` numbers ``fd:3.2.1, …``. The number of dotted
  parts tells the level, the prefix tells the fork, so ids from different
  tables cannot alias as long as sibling fork names differ (the runtime uses
  its unique fork ids). Numbering resumes after the highest id already held in
  the table's own namespace.
* A ref id may occur several times; the last occurrence is current, earlier
  ones stay listed as superseded (``versions`` attribute). An occurrence with
  the current content adds no version: repeating a ref changes nothing.
* Everything returned is XML with attributes and content escaped.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from selfref_tui.context.experiences import escape
from selfref_tui.context.numbers import whole_number

PAGE_SIZE = 4000
OUTPUT_THRESHOLD = 8000
MAX_LISTED_IDS = 20
_NS_PART = re.compile(r"[A-Za-z0-9_-]{1,40}")
_NAT = re.compile(r"(\d+)")
ERROR_TYPES = ("not_found", "invalid_range", "invalid_parameter", "path_not_allowed",
               "write_error")


def namespace_for_key(key: str) -> str:
    """The fd namespace of a memory key: ``main`` → "", ``main::fork::1::fork::2`` → "1.2".

    Matches ``FdTable.child``: the root table's ``child("1")`` is the table of
    ``main::fork::1``, so a fork reloaded from its key keeps numbering where
    its spawn-time table would have, and never aliases its parent.
    """
    parts = key.split("::fork::")[1:]
    return ".".join(p for p in parts if _NS_PART.fullmatch(p))


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def natural_key(text: str) -> list[object]:
    """Sort key that puts fd:2 before fd:10."""
    return [int(p) if p.isdigit() else p for p in _NAT.split(text)]


def quoteattr(value: str) -> str:
    """An XML attribute value with its quotes, like xml.sax.saxutils.quoteattr.

    Own copy: importing xml.sax.saxutils pulls urllib, http and email into the
    app's start-up.
    """
    value = escape(value, {"\n": "&#10;", "\r": "&#13;", "\t": "&#9;"})
    if '"' not in value:
        return f'"{value}"'
    if "'" not in value:
        return f"'{value}'"
    return '"' + value.replace('"', "&quot;") + '"'


def attrs(**values: object) -> str:
    return "".join(f" {k}={quoteattr(str(v))}" for k, v in values.items() if v is not None)


def split_lines(content: str) -> list[str]:
    """Lines split on \\n only, each keeping its \\n, so ''.join() is the content."""
    if not content:
        return []
    lines = content.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


class FdError(Exception):
    """A problem the model can act on; ``xml()`` is what it sees."""

    def __init__(self, kind: str, message: str) -> None:
        if kind not in ERROR_TYPES:
            raise ValueError(f"unknown fd error type {kind!r}")
        super().__init__(message)
        self.kind = kind
        self.message = message

    def xml(self) -> str:
        return f"<fd_error{attrs(type=self.kind)}>{escape(self.message)}</fd_error>"


@dataclass(frozen=True)
class Slice:
    """A validated part of an fd's content and how it was chosen."""

    content: str
    mode: str
    attributes: dict[str, object]


def _int_param(name: str, value: object) -> int:
    """A tool argument that must be a count or a position (1 or more)."""
    number = whole_number(value)
    if number is None:
        raise FdError("invalid_parameter", f"{name} must be a whole number, not {value!r}")
    if number < 1:
        raise FdError("invalid_parameter", f"{name} must be 1 or more (got {number})")
    return number


class FdTable:
    """All refs and fds one memory key can see."""

    def __init__(
        self,
        namespace: str = "",
        *,
        page_size: int = PAGE_SIZE,
        threshold: int = OUTPUT_THRESHOLD,
        clock: Callable[[], str] = now_iso,
    ) -> None:
        if not isinstance(page_size, int) or page_size < 1:
            raise ValueError(f"page_size must be a positive integer, got {page_size!r}")
        if namespace and not all(_NS_PART.fullmatch(p) for p in namespace.split(".")):
            raise ValueError(f"bad fd namespace {namespace!r}: use letters, digits, _ and -")
        self.namespace = namespace
        self.page_size = page_size
        self.threshold = threshold
        self._clock = clock
        self._refs: dict[str, list[dict]] = {}
        self._fds: dict[str, dict] = {}
        self._next = 1
        prefix = f"fd:{namespace}." if namespace else "fd:"
        self._own = re.compile(re.escape(prefix) + r"(\d+)")

    @classmethod
    def from_store(
        cls,
        refs: Mapping[str, list[dict]],
        fds: Mapping[str, dict],
        namespace: str = "",
        **options: object,
    ) -> FdTable:
        table = cls(namespace, **options)  # type: ignore[arg-type]
        for ref_id, occurrences in refs.items():
            table._refs[ref_id] = [dict(o) for o in occurrences]
        for fd_id, record in fds.items():
            table._remember_fd(fd_id, dict(record))
        return table

    # -- adding ----------------------------------------------------------
    def add_ref(self, ref_id: str, content: str, created: str | None = None,
                message_index: int | None = None) -> dict | None:
        """The ref's new version as a store record; None when ``content`` is its current
        content already (written again, or repeated from history): no version is added,
        so the ref keeps the message that defined it and its list of versions stays
        one entry per change."""
        current = self._refs.get(ref_id)
        if current and current[-1]["content"] == content:
            return None
        entry: dict = {"id": ref_id, "content": content, "created": created or self._clock()}
        if message_index is not None:
            entry["message_index"] = message_index
        self._refs.setdefault(ref_id, []).append(entry)
        return {"t": "ref", **entry}

    def add_refs(self, refs: Iterable[object], created: str | None = None,
                 message_index: int | None = None) -> list[dict]:
        """Store parser ``Ref`` values (``.id``, ``.content``) from one message; the
        records of those that changed a ref (see :meth:`add_ref`)."""
        records = (self.add_ref(r.id, r.content, created, message_index)  # type: ignore[attr-defined]
                   for r in refs)
        return [record for record in records if record is not None]

    def add_fd(self, content: str, created: str | None = None, source: str = "") -> dict:
        fd_id = f"fd:{self.namespace}.{self._next}" if self.namespace else f"fd:{self._next}"
        record = {"id": fd_id, "content": content, "created": created or self._clock(),
                  "source": source}
        self._remember_fd(fd_id, record)
        return {"t": "fd", **record}

    def add_output(self, content: str, created: str | None = None,
                   source: str = "") -> tuple[str, dict | None]:
        """Tool output for the model: as is when small, else an fd with a preview."""
        if len(content) <= self.threshold:
            return content, None
        record = self.add_fd(content, created, source)
        fd_id = record["id"]
        pages = self._pages(content)
        preview = content[: self.page_size]
        head = attrs(fd=fd_id, source=source or None, chars=len(content),
                     lines=len(split_lines(content)), pages=pages)
        text = (
            f"<fd_result{head}>"
            f"<fd_preview{attrs(page=1, pages=pages)}>{escape(preview)}</fd_preview>"
            f"<fd_instructions>This output was {len(content)} characters, so it is stored as "
            f"{fd_id}; page 1 of {pages} is shown above. Read more with "
            f'read_fd(fd="{fd_id}", page=2), lines with read_fd(fd="{fd_id}", mode="line", '
            f'start=N, count=M), everything with read_fd(fd="{fd_id}", read_all=true), or save '
            f'it with fd_to_file(fd="{fd_id}", file_path="...").</fd_instructions></fd_result>'
        )
        return text, record

    def child(self, namespace: str) -> FdTable:
        """A fork's table: the parent's refs and fds, numbering that cannot alias them."""
        if not _NS_PART.fullmatch(namespace):
            raise ValueError(f"bad fork namespace {namespace!r}: use letters, digits, _ and -")
        full = f"{self.namespace}.{namespace}" if self.namespace else namespace
        table = FdTable(full, page_size=self.page_size, threshold=self.threshold,
                        clock=self._clock)
        for ref_id, occurrences in self._refs.items():
            table._refs[ref_id] = [dict(o) for o in occurrences]
        for fd_id, record in self._fds.items():
            table._remember_fd(fd_id, dict(record))
        return table

    def records(self) -> list[dict]:
        """Every entry as a store record: what a fork's key gets at spawn."""
        out = [{"t": "ref", **o} for occ in self._refs.values() for o in occ]
        out += [{"t": "fd", **r} for r in self._fds.values()]
        return out

    # -- reading ---------------------------------------------------------
    @property
    def ref_ids(self) -> list[str]:
        return list(self._refs)

    @property
    def fd_ids(self) -> list[str]:
        return sorted(self._fds, key=natural_key)

    def resolve(self, fd_or_ref: str) -> str:
        """The current content of ``fd:N`` / ``ref:ID`` (a bare ref id works too).

        Raises FdError (``.kind``, ``.xml()``) when there is no such entry.
        """
        return self._lookup(fd_or_ref)[1]

    def lookup(self, fd_or_ref: str) -> tuple[str, str]:
        """(canonical id such as ``ref:x`` or ``fd:3``, content); raises FdError."""
        return self._lookup(fd_or_ref)

    def list_refs(self) -> str:
        items = []
        for ref_id, occurrences in self._refs.items():
            cur = occurrences[-1]
            content = cur["content"]
            versions = len(occurrences) if len(occurrences) > 1 else None
            items.append("<ref" + attrs(id=ref_id, created=cur.get("created", ""),
                                        lines=len(split_lines(content)), chars=len(content),
                                        versions=versions) + " />")
        for fd_id in self.fd_ids:
            rec = self._fds[fd_id]
            content = rec["content"]
            items.append("<fd" + attrs(id=fd_id, created=rec.get("created", ""),
                                       source=rec.get("source") or None,
                                       lines=len(split_lines(content)), chars=len(content),
                                       pages=self._pages(content)) + " />")
        head = attrs(count=len(self._refs), fds=len(self._fds))
        return f"<ref_list{head}>{''.join(items)}</ref_list>"

    def get_ref(self, ref_id: str) -> str:
        ref_id = ref_id.removeprefix("ref:")
        occurrences = self._refs.get(ref_id)
        if not occurrences:
            return self._unknown_ref(ref_id).xml()
        content = occurrences[-1]["content"]
        return f"<ref_content{attrs(id=ref_id)}>{escape(content)}</ref_content>"

    def read_fd(self, fd: str, page: object = None, mode: str = "page", start: object = None,
                count: object = None, read_all: bool = False) -> str:
        try:
            fd_id, content = self._lookup(fd)
            part = self._slice(fd_id, content, page, mode, start, count, read_all)
        except FdError as exc:
            return exc.xml()
        head = attrs(fd=fd_id, **part.attributes)
        return f"<fd_content{head}>{escape(part.content)}</fd_content>"

    def extract_to_new_fd(self, fd: str, mode: str = "page", start: object = None,
                          count: object = None, page: object = None, read_all: bool = False,
                          created: str | None = None) -> tuple[str, dict | None]:
        """Copy a part of an fd or ref into a new fd; the text tells the model its id."""
        try:
            fd_id, content = self._lookup(fd)
            part = self._slice(fd_id, content, page, mode, start, count, read_all)
        except FdError as exc:
            return exc.xml(), None
        desc = " ".join(f"{k}={v}" for k, v in part.attributes.items()
                        if k not in ("total_chars", "total_lines", "pages", "next_page"))
        record = self.add_fd(part.content, created, source=f"extract of {fd_id} ({desc})")
        head = attrs(source_fd=fd_id, new_fd=record["id"], mode=part.mode,
                     chars=len(part.content), lines=len(split_lines(part.content)))
        text = f"<fd_extract{head} />"
        return text, record

    # -- internals -------------------------------------------------------
    def _remember_fd(self, fd_id: str, record: dict) -> None:
        self._fds[fd_id] = record
        m = self._own.fullmatch(fd_id)
        if m:
            self._next = max(self._next, int(m.group(1)) + 1)

    def _pages(self, content: str) -> int:
        return max(1, math.ceil(len(content) / self.page_size))

    def _lookup(self, fd: object) -> tuple[str, str]:
        if not isinstance(fd, str) or not fd.strip():
            raise FdError("invalid_parameter",
                          "fd must be a string like fd:3 or ref:my_id; call list_refs to see them")
        fd = fd.strip()
        if fd.startswith("ref:"):
            ref_id = fd[4:]
            if ref_id in self._refs:
                return fd, self._refs[ref_id][-1]["content"]
            raise self._unknown_ref(ref_id)
        if fd.startswith("fd:"):
            if fd in self._fds:
                return fd, self._fds[fd]["content"]
            raise self._unknown_fd(fd)
        if fd in self._refs:
            return f"ref:{fd}", self._refs[fd][-1]["content"]
        if f"fd:{fd}" in self._fds:
            return f"fd:{fd}", self._fds[f"fd:{fd}"]["content"]
        raise FdError("not_found", f"{fd!r} is neither an fd:N nor a ref:ID known here; "
                      "call list_refs to see what exists")

    def _unknown_fd(self, fd: str) -> FdError:
        known = self.fd_ids
        if not known:
            return FdError("not_found", f"{fd} does not exist and there are no fds yet; "
                           "refs are read as ref:ID (see list_refs)")
        shown = ", ".join(known[:MAX_LISTED_IDS])
        more = f" and {len(known) - MAX_LISTED_IDS} more" if len(known) > MAX_LISTED_IDS else ""
        return FdError("not_found", f"{fd} does not exist. Known fds: {shown}{more}. "
                       "Use one of these, or list_refs for everything.")

    def _unknown_ref(self, ref_id: str) -> FdError:
        known = sorted(self._refs, key=natural_key)
        if not known:
            return FdError("not_found", f"there is no ref {ref_id!r}: no refs have been written "
                           'yet; mark content with <ref id="..."> first')
        shown = ", ".join(known[:MAX_LISTED_IDS])
        more = f" and {len(known) - MAX_LISTED_IDS} more" if len(known) > MAX_LISTED_IDS else ""
        return FdError("not_found", f"there is no ref {ref_id!r}. Known refs: {shown}{more}. "
                       "Use one of these ids.")

    def _slice(self, fd_id: str, content: str, page: object, mode: object, start: object,
               count: object, read_all: object) -> Slice:
        total = len(content)
        if read_all:
            return Slice(content, "all", {"mode": "all", "total_chars": total})
        if mode is None:
            mode = "page"
        if mode == "page":
            if page is not None and start is not None:
                raise FdError("invalid_parameter", "give either page or start in page mode")
            first = _int_param("page" if start is None else "start",
                               page if page is not None else (1 if start is None else start))
            n = _int_param("count", count) if count is not None else 1
            pages = self._pages(content)
            last = first + n - 1
            if last > pages:
                raise FdError("invalid_range", f"{fd_id} has {pages} page(s) of "
                              f"{self.page_size} characters; ask for pages 1 to {pages}")
            lo, hi = (first - 1) * self.page_size, min(total, last * self.page_size)
            return Slice(content[lo:hi], "page", {
                "mode": "page", "page": first, "page_count": n if n > 1 else None,
                "pages": pages, "total_chars": total,
                "next_page": last + 1 if last < pages else None})
        if page is not None:
            raise FdError("invalid_parameter",
                          f"page only applies in page mode; in {mode} mode use start and count")
        if mode == "line":
            lines = split_lines(content)
            return self._range(fd_id, lines, "line", start, count)
        if mode == "char":
            return self._range(fd_id, content, "char", start, count)
        raise FdError("invalid_parameter", f"mode must be page, line or char, not {mode!r}")

    def _range(self, fd_id: str, items: list[str] | str, unit: str, start: object,
               count: object) -> Slice:
        total = len(items)
        first = _int_param("start", 1 if start is None else start)
        if total == 0:
            raise FdError("invalid_range", f"{fd_id} is empty; there are no {unit}s to read")
        if first > total:
            raise FdError("invalid_range", f"{fd_id} has {total} {unit}s; start must be 1 to "
                          f"{total}")
        n = _int_param("count", count) if count is not None else total - first + 1
        last = first + n - 1
        if last > total:
            raise FdError("invalid_range", f"{fd_id} has {total} {unit}s; from start={first} "
                          f"count can be at most {total - first + 1}")
        text = "".join(items[first - 1:last])
        return Slice(text, unit, {"mode": unit, "start": first, "count": n,
                                  f"total_{unit}s": total})
