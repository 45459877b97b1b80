"""Messages a person types while a turn is running.

The router puts text here; the loop drains it at every compile boundary and
turns each text into a ``UserMessageMutation``, so the model sees it before
its next step without the turn being restarted. Whatever is still here when
the turn ends is handed back to the router to start the next turn.
"""

from __future__ import annotations

from typing import Any

#: a person's message: its text, or content parts (text and images)
Message = str | list[dict[str, Any]]


class Inbox:
    """A FIFO of texts, closed when its turn can no longer deliver them."""

    def __init__(self) -> None:
        self._items: list[Message] = []
        self._closed = False

    def put(self, text: Message) -> bool:
        """Queue ``text``; False if the turn already stopped delivering."""
        if self._closed:
            return False
        self._items.append(text)
        return True

    def drain(self) -> list[Message]:
        """Take every queued text (the loop calls this at a compile boundary)."""
        items, self._items = self._items, []
        return items

    def close(self) -> list[Message]:
        """Stop accepting texts and return the undelivered ones."""
        self._closed = True
        return self.drain()

    @property
    def pending(self) -> list[Message]:
        return list(self._items)

    @property
    def closed(self) -> bool:
        return self._closed

    def __len__(self) -> int:
        return len(self._items)
