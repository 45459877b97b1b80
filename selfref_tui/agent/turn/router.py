"""Between the person and the runtime: what a line of input means right now.

The same keystroke means different things depending on whether a turn is
running: idle input starts a turn; input during a turn is queued and reaches
the model at its next step (never restarting the turn, never lost); Esc
aborts, and hands back what the model has not seen yet (:meth:`~AgentInputRouter.interrupt`).
Keeping that decision here, with no UI import, lets the terminal app, the
command line and the tests share it and test it without a screen.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Protocol

from ...context.images import text_of, user_content
from ..abort import CLOSING_REASON, DEFAULT_REASON, AbortSignal
from ..events import ErrorEvent
from .inbox import Inbox, Message


class TurnRunner(Protocol):
    """What the router needs from an agent (``loop.Agent`` provides it)."""

    async def run_turn(
        self,
        key: str,
        user_text: Message | None,
        *,
        abort: AbortSignal | None = ...,
        inbox: Inbox | None = ...,
        retry: bool = ...,
    ) -> str: ...

    def failed_message(self, key: str) -> str | None: ...

    def unanswered_message(self, key: str) -> str | None: ...

    def answer_question(self, question_id: str, choice: str) -> bool: ...

    def request_compaction(self, key: str, focus: str = "") -> None: ...

    def compaction_requested(self, key: str) -> bool: ...

    def compact_offered(self, key: str) -> bool: ...


class AgentInputRouter:
    """Routes person input to one memory key's turns."""

    def __init__(self, agent: TurnRunner, key: str = "main") -> None:
        self._agent = agent
        self._key = key
        self._task: asyncio.Task[str] | None = None
        self._abort: AbortSignal | None = None
        self._inbox: Inbox | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        #: /compact came during a turn: see that it is not left waiting for the next message
        self._compaction_after = False
        #: sent after the running turn stopped taking messages (an Esc, a stop):
        #: the next turn's, once this one has ended
        self._after: list[Message] = []
        #: a :meth:`stop` waits for the turn: what came meanwhile is handed back, not started
        self._holding = False
        #: outcome of every finished turn, in order ("done", "aborted", ...)
        self.outcomes: list[str] = []

    # ------------------------------------------------------------------ state

    @property
    def busy(self) -> bool:
        return self._task is not None

    @property
    def queued(self) -> list[str]:
        """Texts typed during the running turn that the model has not seen yet."""
        return [text_of(m) for m in self._inbox.pending] if self._inbox is not None else []

    @property
    def key(self) -> str:
        return self._key

    @key.setter
    def key(self, value: str) -> None:
        if self.busy:
            raise RuntimeError("cannot switch memory key while a turn is running; press Esc first")
        self._key = value

    # ----------------------------------------------------------------- input

    def submit(self, text: str, images: Sequence[str] = (), names: Sequence[str] = ()) -> str:
        """``"started"`` when idle (a new turn), ``"queued"`` while a turn runs.

        ``images`` (``data:`` URLs) go with the text as ``image_url`` content parts,
        each with its attached file's name from ``names`` (kept, never sent).
        """
        message = user_content(text, images, names)
        if self._inbox is not None and self._inbox.put(message):
            return "queued"
        if self.busy:  # the turn is stopping: this one starts the next
            self._after.append(message)
            return "queued"
        self._start(message, [])
        return "started"

    def request_compaction(self, focus: str = "") -> str:
        """The /compact command: the model is asked to call ``compact`` at its next step.

        ``focus`` (``/compact FOCUS``: what the summary should keep above all) goes
        into the runtime's note the model reads.

        Idle: a turn without new text starts at once (``"started"``): the runtime's
        own note asks the model, so no message of the person's is made up and
        stored. During a turn: the request is picked up at the next compile
        boundary (``"queued"``); a turn that ends before it had one (its answer
        was final) is followed by a turn for the compaction alone.

        ``"refused"`` when the window is too small to offer the ``compact`` tool:
        nothing is requested and no turn starts (it would only call the model
        to answer the last message again).
        """
        if not self._agent.compact_offered(self._key):
            return "refused"
        self._agent.request_compaction(self._key, focus)
        if self.busy:
            self._compaction_after = True
            return "queued"
        self._start(None, [])
        return "started"

    def retry(self) -> str:
        """Send the failed last message again (``/retry``), without typing it twice; a
        last message left with no answer at all (the app killed before it) is answered.

        ``"started"``; ``"busy"`` while a turn runs; ``"nothing"`` when the last
        turn did not fail before its answer.
        """
        if self.busy:
            return "busy"
        if self._agent.failed_message(self._key) is not None:
            self._start(None, [], retry=True)
            return "started"
        if self._agent.unanswered_message(self._key) is not None:
            self._start(None, [])  # answered as it stands (kill -9 before its answer)
            return "started"
        return "nothing"

    def abort(self, reason: str = DEFAULT_REASON) -> bool:
        """Fire the running turn's abort signal; False when nothing runs."""
        if self._abort is None or self._abort.fired:
            return False
        self._abort.fire(reason)
        return True

    def interrupt(self, reason: str = DEFAULT_REASON) -> list[Message] | None:
        """Esc: fire the running turn's abort signal and take back the messages queued
        for it that the model has not seen yet (oldest first), so no turn follows with
        them: Esc means stop, and the front end puts them back in the input.

        A message the model already took in at a step stays delivered. None when
        nothing runs (or it is already stopping).
        """
        if self._abort is None or self._abort.fired:
            return None
        leftover = self._inbox.close() if self._inbox is not None else []
        self._abort.fire(reason)
        return leftover

    def answer(self, question_id: str, choice: str) -> None:
        """Answer a question a tool asked the person (``QuestionAsked``)."""
        self._agent.answer_question(question_id, choice)

    async def stop(self, reason: str = DEFAULT_REASON) -> list[Message]:
        """Stop the running turn as Esc does and wait until it has ended.

        The messages queued for it and not yet delivered are not sent: they are
        returned (a front end puts them back in the input), so no turn follows.
        """
        leftover = self._inbox.close() if self._inbox is not None else []
        self.abort(reason)
        task = self._task
        self._holding = True
        try:
            if task is not None:
                try:
                    await task
                except (asyncio.CancelledError, Exception):
                    pass
        finally:
            self._holding = False
        later, self._after = self._after, []
        return leftover + later

    async def wait_idle(self) -> None:
        """Return when no turn runs and none is about to start."""
        while True:
            await self._idle.wait()
            if not self.busy:
                return

    # ------------------------------------------------------------- internals

    def _start(self, text: Message | None, carried: list[Message], *,
               retry: bool = False) -> None:
        self._abort = AbortSignal()
        self._inbox = Inbox()
        for extra in carried:
            self._inbox.put(extra)
        self._idle.clear()
        self._task = asyncio.create_task(
            self._run(self._key, text, self._abort, self._inbox, retry),
            name=f"turn:{self._key}",
        )

    async def _run(self, key: str, text: Message | None, abort: AbortSignal, inbox: Inbox,
                   retry: bool = False) -> str:
        outcome = "error"
        try:
            if retry:
                outcome = await self._agent.run_turn(key, text, abort=abort, inbox=inbox,
                                                     retry=True)
            else:
                outcome = await self._agent.run_turn(key, text, abort=abort, inbox=inbox)
        except asyncio.CancelledError:
            outcome = "aborted"
            raise
        except Exception as exc:  # the loop reports its own errors; this is a last guard
            self._emit(ErrorEvent(key=key, message=f"internal error: {exc}", kind="internal"))
        finally:
            self.outcomes.append(outcome)
            leftover = inbox.close()
            if not self._holding:
                leftover += self._after
                self._after = []
            self._task = None
            self._abort = None
            self._inbox = None
            compact = self._compaction_after and outcome != "aborted"
            self._compaction_after = False
            if leftover:
                # Typed too late for this turn: it is the person's next message
                # (a compaction still requested goes with it, at its first step).
                self._start(leftover[0], leftover[1:])
            elif compact and self._agent.compaction_requested(key):
                self._start(None, [])  # the request came after this turn's last step
            else:
                self._idle.set()
        return outcome

    def _emit(self, event: Any) -> None:
        emit = getattr(self._agent, "emit", None)
        if callable(emit):
            emit(event)

    async def aclose(self) -> None:
        """Abort a running turn and wait for it to settle (app shutdown): a stop whose
        undelivered messages nobody takes back."""
        await self.stop(CLOSING_REASON)
