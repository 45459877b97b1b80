"""Questions a tool asks the person, and their answers.

A tool such as ``fd_to_file`` may need the person to choose (overwrite a
file?). The broker turns that into a ``QuestionAsked`` event and a future the
tool awaits; the front end answers through the router. Without a front end
that can answer (``ask`` on the command line), the tool gets its default at
once, so nothing waits for a person who is not there.
"""

from __future__ import annotations

import asyncio

from ..events import EventSink, QuestionAsked


class QuestionBroker:
    """Pairs ``QuestionAsked`` events with the answers that come back."""

    def __init__(self, emit: EventSink) -> None:
        self.emit = emit
        #: set by a front end that can answer ``QuestionAsked``
        self.interactive = False
        self._pending: dict[str, asyncio.Future[str]] = {}
        self._seq = 0

    async def ask(self, key: str, prompt: str, choices: tuple[str, ...], default: str) -> str:
        """The person's choice; ``default`` when no front end answers questions."""
        if not self.interactive:
            return default
        self._seq += 1
        question_id = f"q{self._seq}"
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._pending[question_id] = future
        self.emit(QuestionAsked(key=key, question_id=question_id, prompt=prompt, choices=choices))
        try:
            return await future
        finally:
            self._pending.pop(question_id, None)

    def answer(self, question_id: str, choice: str) -> bool:
        """Deliver a choice; False when the question is unknown or already answered."""
        future = self._pending.get(question_id)
        if future is None or future.done():
            return False
        future.set_result(choice)
        return True

    @property
    def pending(self) -> list[str]:
        """Ids of questions still waiting for the person."""
        return [q for q, f in self._pending.items() if not f.done()]
