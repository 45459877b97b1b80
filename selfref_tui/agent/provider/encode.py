"""The request body encoded once per message: only what changed since an earlier call."""

from __future__ import annotations

import json
from typing import Any

#: an image URL at least this long is kept as the message's own string in an encoding,
#: not as a second, encoded copy (a 20 MB picture's data URL is 27 MB)
SHARED_CHARS = 64 * 1024


def _dumps(value: Any) -> str:
    # The client's own JSON settings (openai._utils._json.openapi_dumps).
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _utf8(text: str) -> bytes:
    """JSON text as UTF-8, a lone surrogate in it written as its JSON escape.

    ``json.loads`` accepts half a surrogate pair (``"\\ud83d"``, an emoji a server cut
    in two), so an answer or a tool's result may hold one; UTF-8 has no encoding for it,
    and every later request carrying that message would fail. It can only sit inside a
    JSON string, where ``\\ud83d`` is its escape: the server reads the same value.
    """
    return text.encode("utf-8", "backslashreplace")


def encoded_once(request: dict[str, Any]) -> bytes | None:
    """A request body sent once (nothing to reuse), lone surrogates escaped as in
    :class:`_EncodedMessages`; None when it is not plain JSON (the client encodes it)."""
    try:
        return _utf8(_dumps(request))
    except (TypeError, ValueError):
        return None


def _copy(value: Any) -> Any:
    """A copy of a message's containers, its strings and numbers shared: they cannot
    change in place (a caller can only replace them, which the copy then shows), and a
    decoded copy of an image's data URL was megabytes more per image."""
    kind = type(value)
    if kind is dict:
        return {key: _copy(item) for key, item in value.items()}
    if kind is list:
        return [_copy(item) for item in value]
    if kind is tuple:
        return tuple(_copy(item) for item in value)
    return value


def _encode(message: Any) -> bytes | tuple[bytes | str, ...]:
    """A message's encoding: its bytes, or, around its long image URLs, pieces that are
    bytes and the URLs themselves (shared with the message: they are encoded when a
    body is made, a copy that lives as long as the request instead of the conversation).

    A URL is a piece only where the JSON holds it as it is (no escapes), so the pieces
    joined are exactly the message's bytes.
    """
    text = _dumps(message)
    content = message.get("content") if type(message) is dict else None
    if type(content) is not list:
        return _utf8(text)
    pieces: list[bytes | str] = []
    at = 0
    for part in content:
        inner = part.get("image_url") if type(part) is dict else None
        url = inner.get("url") if type(inner) is dict else None
        if type(url) is not str or len(url) < SHARED_CHARS or not url.isascii():
            continue
        found = text.find(url, at)
        if found < 0:  # escaped in the JSON: stays in the bytes
            continue
        pieces += [_utf8(text[at:found]), url]
        at = found + len(url)
    if not pieces:
        return _utf8(text)
    pieces.append(_utf8(text[at:]))
    return tuple(pieces)


class _EncodedMessages:
    """The request body, re-encoding only messages that changed since an earlier call.

    Every call sends the whole history; at 1,000 messages encoding it is
    ~1.3 ms, at 10,000 ~13 ms, all but the last few messages unchanged. Each
    slot keeps one earlier call's messages as copies of their containers (so
    a caller changing a message in place is noticed) and their encodings (long
    image URLs in them kept as the messages' own strings, see _encode); the
    slot whose start equals (``==``) the new messages the longest is reused
    from there on. A few slots, so that forks streaming
    next to their parent do not evict each other. Same bytes as ``json.dumps``
    of the whole body, up to key order at the top level.
    """

    SLOTS = 4

    def __init__(self) -> None:
        # most recently used last; each slot: (copies, UTF-8 encodings or their pieces)
        self._slots: list[tuple[list[Any], _Encodings]] = []

    def body(self, request: dict[str, Any]) -> bytes:
        messages = request["messages"]
        best, same = None, 0
        for slot in self._slots:
            n = 0
            for old, new in zip(slot[0], messages, strict=False):
                if old != new:
                    break
                n += 1
            if best is None or n > same:
                best, same = slot, n
        if best is not None and same == len(best[0]):
            self._slots.remove(best)  # this history again, grown: extend it in place
            slot = best
        else:  # another history (a fork, or after a compaction): keep the old one too
            slot = ((best[0][:same], _Encodings(best[1][:same],
                                                [i for i in best[1].pieced if i < same]))
                    if best is not None else ([], _Encodings()))
            if len(self._slots) >= self.SLOTS:
                del self._slots[0]
        self._slots.append(slot)
        copies, encoded = slot
        for message in messages[same:]:
            item = _encode(message)
            if type(item) is not bytes:
                encoded.pieced.append(len(encoded))
            encoded.append(item)  # bytes: joining them is a plain copy
            copies.append(_copy(message))
        head = _utf8(_dumps({k: v for k, v in request.items() if k != "messages"}))
        sep = b"," if head != b"{}" else b""
        return b"".join((head[:-1], sep, b'"messages":[', _joined(encoded), b"]}"))


class _Encodings(list):
    """A history's encodings (bytes, or pieces: see _encode), and where the pieces are,
    so that the others join in one call (a loop over 10,000 messages costs ~2 ms)."""

    def __init__(self, items: Any = (), pieced: Any = ()) -> None:
        super().__init__(items)
        self.pieced: list[int] = list(pieced)


def _joined(encoded: _Encodings) -> bytes:
    """The encodings joined with commas, each one's pieces joined first."""
    if not encoded.pieced:
        return b",".join(encoded)
    runs: list[bytes] = []
    start = 0
    for at in encoded.pieced:
        if start < at:
            runs.append(b",".join(encoded[start:at]))
        runs.append(b"".join([piece if type(piece) is bytes else piece.encode("ascii")
                              for piece in encoded[at]]))
        start = at + 1
    if start < len(encoded):
        runs.append(b",".join(encoded[start:]))
    return b",".join(runs)
