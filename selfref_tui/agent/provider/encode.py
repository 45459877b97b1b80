"""The request body encoded once per message: only what changed since an earlier call."""

from __future__ import annotations

import json
from typing import Any


def _dumps(value: Any) -> str:
    # The client's own JSON settings (openai._utils._json.openapi_dumps).
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)



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


class _EncodedMessages:
    """The request body, re-encoding only messages that changed since an earlier call.

    Every call sends the whole history; at 1,000 messages encoding it is
    ~1.3 ms, at 10,000 ~13 ms, all but the last few messages unchanged. Each
    slot keeps one earlier call's messages as copies of their containers (so
    a caller changing a message in place is noticed) and their encodings; the
    slot whose start equals (``==``) the new messages the longest is reused
    from there on. A few slots, so that forks streaming
    next to their parent do not evict each other. Same bytes as ``json.dumps``
    of the whole body, up to key order at the top level.
    """

    SLOTS = 4

    def __init__(self) -> None:
        # most recently used last; each slot: (copies, UTF-8 encodings)
        self._slots: list[tuple[list[Any], list[bytes]]] = []

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
            slot = (best[0][:same], best[1][:same]) if best is not None else ([], [])
            if len(self._slots) >= self.SLOTS:
                del self._slots[0]
        self._slots.append(slot)
        copies, encoded = slot
        for message in messages[same:]:
            text = _dumps(message)
            encoded.append(text.encode())  # bytes: joining them is a plain copy
            copies.append(_copy(message))
        head = _dumps({k: v for k, v in request.items() if k != "messages"}).encode()
        sep = b"," if head != b"{}" else b""
        return b"".join((head[:-1], sep, b'"messages":[', b",".join(encoded), b"]}"))
