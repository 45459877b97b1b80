"""The person steers the conversation: rewind, undo, edit, regenerate, branch.

The store does the work (``selfref.rewind``: a rewind patch, its report, the
files' checkpoints; ``SelfReference.branch``); this mixin adds what a window
needs around it: a running turn is stopped first (as Esc, its partial answer
kept), store work runs in a thread, the agent forgets what it derived from the
old context, and a person's message comes back with its text and images for
the input. A mixin of :class:`~selfref_tui.agent.chat.controller.ChatController`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from .refusals import Refused

if TYPE_CHECKING:
    from selfref_tui.agent.turn.inbox import Message
    from selfref_tui.agent.turn.loop import Agent
    from selfref_tui.agent.turn.router import AgentInputRouter
    from selfref_tui.config import AppConfig
    from selfref_tui.context.history import HistoryEntry
    from selfref_tui.selfref.checkpoints import FileChange, RestoreReport
    from selfref_tui.selfref.reference import ReadOnlyReference, SelfReference
    from selfref_tui.selfref.rewind import RewindReport

T = TypeVar("T")

#: how many of the person's messages ``/rewind`` offers
RECENT = 20


@dataclass
class Rewound:
    """A rewind done for the person: what changed, and a person's message to edit."""

    report: RewindReport
    #: the text and images (``data:`` URLs) of the person's message rewound to, for the input
    text: str = ""
    images: list[str] = field(default_factory=list)
    #: the attached files' names of those images ("" where none was kept)
    names: list[str] = field(default_factory=list)


class Steering:
    """Rewind, undo, edit, regenerate and branch the key on screen."""

    #: messages queued for a turn a rewind stopped, never sent (for the input): each its
    #: text, or its content parts (text and images)
    unsent: list[Message]

    if TYPE_CHECKING:  # from Startup and KeyLifecycle
        config: AppConfig
        key: str
        router: AgentInputRouter | None

        @property
        def busy(self) -> bool: ...
        def _agent(self) -> Agent: ...
        def _store(self) -> SelfReference | ReadOnlyReference: ...
        def _router(self) -> AgentInputRouter: ...
        def check_ready(self) -> None: ...
        def check_writable(self, what: str) -> None: ...
        async def _in_thread(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T: ...

    # ----------------------------------------------------------- reading

    def entry(self, n: int) -> HistoryEntry | None:
        """Message ``n`` of the key on screen, or None when it has none."""
        self.check_ready()
        try:
            return self._agent().memory(self.key).entry(n)
        except IndexError:
            return None

    def recent_person_messages(self, count: int = RECENT) -> list[HistoryEntry]:
        """The person's latest messages still in the context, newest first (``/rewind``).

        Read by number from the newest: the list of every entry is made anew after each
        commit (~0.2 s at 100,000 messages), and the person's last message is near the end.
        """
        from selfref_tui.context.history import is_person_message

        self.check_ready()
        memory = self._agent().memory(self.key)
        out: list[HistoryEntry] = []
        for n in range(memory.last_number, 0, -1):
            if len(out) >= count:
                break
            try:
                entry = memory.entry(n)
            except IndexError:  # a hidden number
                continue
            if not entry.rewound and is_person_message(entry.message):
                out.append(entry)
        return out

    def can_undo_rewind(self) -> bool:
        """Whether an undo has a rewind to take back: F8 and the rewind list offer it only
        then (a read-only window's store has no rewinds to undo)."""
        self.check_ready()
        position = getattr(self._agent().memory(self.key), "undoable_rewind", None)
        return position is not None and position >= 0

    def last_person_message(self) -> HistoryEntry | None:
        found = self.recent_person_messages(1)
        return found[0] if found else None

    # ----------------------------------------------------------- steering

    async def rewind(self, n: int) -> Rewound:
        """Take the context back to just before message ``n`` (a running turn stops first).

        A person's message comes back as text and images for the input (edit and
        resend). Raises :class:`Refused` for a number the key does not have.
        """
        from selfref_tui.context.history import is_person_message
        from selfref_tui.context.images import named_images, text_of
        from selfref_tui.selfref.errors import StoreError
        from selfref_tui.selfref.rewind import RewindError, rewind

        await self._before_steering("rewind")
        memory = self._agent().memory(self.key)
        try:
            report = await self._in_thread(rewind, memory, n)
        except RewindError as exc:
            raise Refused(f"{exc}.") from None
        except StoreError as exc:  # the disk refused the patch: nothing changed
            raise Refused(str(exc), "error") from None
        self._agent().context_changed(self.key)
        done = Rewound(report)
        message = memory.entry(n).message
        if is_person_message(message):
            done.text = text_of(message.get("content"))
            pairs = named_images(message.get("content"))
            done.images = [url for url, _ in pairs]
            done.names = [name for _, name in pairs]
        return done

    async def undo_rewind(self) -> RewindReport:
        """Undo the key's last rewind (its messages come back into the context)."""
        from selfref_tui.selfref.errors import StoreError
        from selfref_tui.selfref.rewind import RewindError, undo

        await self._before_steering("undo a rewind")
        try:
            report = await self._in_thread(undo, self._agent().memory(self.key))
        except RewindError as exc:
            raise Refused(f"Nothing to undo: {exc}.") from None
        except StoreError as exc:
            raise Refused(str(exc), "error") from None
        self._agent().context_changed(self.key)
        return report

    async def edit(self, n: int | None = None) -> Rewound:
        """Rewind to the person's message ``n`` (default: their last) to edit and resend it."""
        from selfref_tui.context.history import is_person_message

        self.check_ready()
        entry = self.entry(n) if n is not None else self.last_person_message()
        if entry is None:
            raise Refused("Nothing to edit: no message of yours in this conversation yet.")
        if not is_person_message(entry.message):
            raise Refused(f"Message {entry.n} is the model's ({entry.role}): only your own "
                          "messages can be edited; rewind to it instead (F8).")
        return await self.rewind(entry.n)

    async def regenerate(self) -> tuple[Rewound, str]:
        """Ask again for the last answer: rewind to the person's last message and send it as
        it was (its images too); the old answer stays readable, rewound."""
        self.check_ready()
        last = self.last_person_message()
        if last is None:
            raise Refused("Nothing to regenerate: no message of yours in this conversation yet.")
        done = await self.rewind(last.n)
        outcome = self._router().submit(done.text, done.images, done.names)
        return done, outcome

    async def branch(self, n: int | None, name: str) -> str:
        """A new key ``name`` from the state before message ``n`` (None: the whole
        conversation); the key on screen is not changed. The caller opens the new key."""
        from selfref_tui.selfref.errors import StoreError

        self.check_ready()
        self.check_writable("branch")
        memory = self._agent().memory(self.key)
        at = n if n is not None else memory.last_number + 1
        try:
            await self._in_thread(self._store().branch, self.key, at, name)
        except StoreError as exc:
            raise Refused(str(exc), "error") from None
        self._agent().release(name)  # opened by the branch; the caller opens it on screen
        return name

    async def branch_names(self) -> tuple[str, set[str]]:
        """A free ``<key>-branch-N`` to suggest, and the names already taken (without the
        invisible characters of a key made before names were checked: a new name is
        refused for them, and the person could not see what to delete)."""
        from selfref_tui.selfref.keys import without_hidden

        existing = {info.key for info in await self._in_thread(self._store().keys)}
        base, n = without_hidden(self.key), 1
        while f"{base}-branch-{n}" in existing:
            n += 1
        return f"{base}-branch-{n}", existing

    async def files_standing(self, changes: list[FileChange]) -> list[str]:
        """For each of ``changes``, why restoring would leave its file as it is now ("":
        it would restore it), to offer only the files a restore can change."""
        from selfref_tui.selfref.checkpoints import standing
        from selfref_tui.selfref.file_walk import write_roots

        roots = write_roots(self.config.agent.allowed_roots)
        return await self._in_thread(lambda: [standing(c, roots) for c in changes])

    async def restore_files(self, changes: list[FileChange]) -> RestoreReport:
        """Put the chosen files back as they were (never over a file changed since)."""
        from selfref_tui.selfref.checkpoints import restore
        from selfref_tui.selfref.file_walk import write_roots

        memory = self._agent().memory(self.key)
        roots = write_roots(self.config.agent.allowed_roots)
        return await self._in_thread(restore, memory.checkpoints, changes, roots)

    async def _before_steering(self, what: str) -> None:
        """Ready, writable, and no turn running: one still running is stopped as Esc stops it.

        Messages the person queued for it and the model never saw are kept in
        :attr:`unsent` (the app puts them back in the input).
        """
        self.check_ready()
        self.check_writable(what)
        router = self.router
        if router is not None and router.busy:
            self.unsent = await router.stop("the person rewound the conversation")
