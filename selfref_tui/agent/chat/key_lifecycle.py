"""The key on screen and its lifecycle: open, switch, let go, rename, trash.

A window shows one memory key. Opening another lets the previous one go
(another window may write it then); a key that cannot be opened is
remembered (``key_error``) and input is refused until a key opens. Messages
typed before the runtime runs are kept here until the key is open. A
read-only window refuses whatever would write the store.

Store work runs in threads that closing waits for (``_in_thread``, from
:mod:`~selfref_tui.agent.chat.startup`), so a caller on the UI's loop is never held up
and nothing touches the store after it closed. A mixin of
:class:`~selfref_tui.agent.chat.controller.ChatController`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from selfref_tui.safety import name_line

from .refusals import STARTING, KeyOpenError, Refused

if TYPE_CHECKING:
    from selfref_tui.agent.protocols import MemoryLike
    from selfref_tui.agent.turn.loop import Agent
    from selfref_tui.agent.turn.router import AgentInputRouter
    from selfref_tui.config import AppConfig
    from selfref_tui.selfref.reference import ReadOnlyReference, SelfReference

T = TypeVar("T")


@dataclass
class OpenedKey:
    """A key the controller has just opened: what the app shows of it."""

    key: str
    memory: MemoryLike
    #: the store moved a damaged log aside (kept for recovery): what it said, or ""
    salvaged: str = ""
    #: damaged records skipped, a torn write repaired…
    warnings: list[str] = field(default_factory=list)
    #: it runs on another endpoint or model than the key before (its /model, /profile)
    provider_changed: bool = False


class KeyLifecycle:
    """The key on screen, why it cannot take input, and what was typed before it opened."""

    if TYPE_CHECKING:  # from Startup
        agent: Agent | None
        config: AppConfig
        ready: bool
        read_only: bool
        router: AgentInputRouter | None

        @property
        def busy(self) -> bool: ...
        def _agent(self) -> Agent: ...
        def _store(self) -> SelfReference | ReadOnlyReference: ...
        async def use_key_settings(self, memory: MemoryLike) -> tuple[bool, list[str]]: ...
        async def _in_thread(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T: ...
        def _thread(self, fn: Callable[..., T], *args: Any, **kwargs: Any
                    ) -> asyncio.Future[T]: ...

    def __init__(self, key: str) -> None:
        #: the key on screen (the router's key once the runtime runs)
        self.key = key
        #: why the current key cannot take input (locked, corrupt…); None when it can
        self.key_error: str | None = None
        self._early: list[str] = []
        #: store threads reading a key through the agent (token counts), by key
        self._readers: dict[str, set[asyncio.Future[Any]]] = {}
        #: keys being let go: no new reader of them starts
        self._letting_go: set[str] = set()
        #: what was odd about the last-key file (``selfref/last_used.py``), told with
        #: the next key opened; told once per run
        self._state_problem: str | None = None
        self._state_told = False

    # ------------------------------------------------------------ opening

    async def open_key(self, key: str) -> OpenedKey:
        """Open ``key`` and make it the one on screen; the previous key is let go.

        Raises :class:`KeyOpenError` (and remembers why in ``key_error``) when it
        cannot be opened; the previous key is then kept, and input is refused
        until a key opens.
        """
        from selfref_tui.selfref.errors import CorruptStoreError, StoreError

        agent = self._agent()
        salvaged = ""
        try:
            try:
                memory = await self._in_thread(agent.memory, key)
            except CorruptStoreError as exc:
                # The store moved the damaged log aside (kept for recovery): carry on
                # with the key as it now stands, and say so.
                salvaged = str(exc)
                memory = await self._in_thread(agent.memory, key)
        except StoreError as exc:
            self.key_error = str(exc)
            raise KeyOpenError(str(exc), expected=True) from exc
        except Exception as exc:
            self.key_error = f"Cannot open conversation '{name_line(key)}': {exc}"
            raise KeyOpenError(self.key_error, expected=False) from exc
        self.key_error = None
        warnings = list(memory.take_warnings())
        state_problem, self._state_problem = self._state_problem, None
        if not self.read_only:
            # A key opened here is listed (switcher, `keys list`) before its first message,
            # and is the one the next start opens (without --key).
            await self._in_thread(self._store().create, key)
            state_problem = state_problem or await self._in_thread(
                _remember_shown, self._store().data_dir, key)
        if state_problem is not None and not self._state_told:
            warnings.append(state_problem)  # once: the file stays odd until it is moved
            self._state_told = True
        previous, self.key = self.key, key
        if self.router is not None:
            self.router.key = key
        if previous != key:
            await self._let_go(previous)  # another window may write it now
        changed, notes = await self.use_key_settings(memory)
        return OpenedKey(key, memory, salvaged, warnings + notes, changed)

    def prepare_search(self, key: str) -> None:
        """Once ``key`` is on screen: take in its history for the model's ``search_history``
        in a thread (``Agent.prepare_search``) when it is long and partly compacted, so
        the model's first search does not pay for it. Nothing for a key not loaded (or
        being let go, or no longer on screen): it is only read, never opened, here."""
        if self.agent is None or key != self.key or key in self._letting_go:
            return
        if key not in self._store().open_keys():
            return
        self.agent.prepare_search(key)

    async def resume_key(self) -> str:
        """The key to open first: the one shown last under this data dir, when the
        config asks for it (no ``--key``) and it still exists; else the config's key."""
        if self.config.resume:
            from selfref_tui.selfref.last_used import read_last_key

            last, self._state_problem = await self._in_thread(read_last_key,
                                                              self._store().data_dir)
            if last is not None:
                self.key = last
                if self.router is not None:
                    self.router.key = last
        return self.key

    def check_switch(self, key: str) -> bool:
        """Whether opening ``key`` is needed (False: it is already on screen and fine).

        Raises :class:`Refused` while starting up, during a turn, or for a name
        that is not a valid key.
        """
        from selfref_tui.selfref.errors import StoreError
        from selfref_tui.selfref.keys import validate_key

        if not self.ready:
            raise Refused(STARTING)
        if self.busy:
            raise Refused("A turn is running; press Esc first, then switch conversations.")
        try:
            validate_key(key)
        except StoreError as exc:
            raise Refused(str(exc), "error") from exc
        return key != self.key or bool(self.key_error)

    # ------------------------------------------------------ the key switcher

    async def person_keys(self) -> list[dict[str, Any]]:
        """A person's keys, as the switcher and `keys list` show them (forks left out)."""
        keys = [
            {"key": i.key, "messages": i.messages, "updated": i.updated,
             "origin": i.origin_text(short=True)}
            for i in await self._in_thread(self._store().keys, forks=False)
        ]
        if self.key not in {k["key"] for k in keys}:
            keys.insert(0, {"key": self.key, "messages": 0, "updated": None})
        return keys

    async def new_key_names(self) -> tuple[str, set[str]]:
        """A free ``chat-N`` to suggest for a new key, and the names already taken."""
        self.check_writable("create conversations")
        existing = {info.key for info in await self._in_thread(self._store().keys)}
        existing.add(self.key)
        n = 1
        while f"chat-{n}" in existing:
            n += 1
        return f"chat-{n}", existing

    async def rename_key(self, old: str, new: str) -> None:
        """Rename ``old`` (its folder copied under the new name, the old one trashed).

        The key on screen is let go first; the caller opens it again, under
        whichever name it then has. Store errors say what to do.
        """
        from selfref_tui.selfref.errors import StoreError

        if old == self.key:
            if self.busy:
                raise StoreError("A turn is running; press Esc first, then rename.")
            await self._let_go(old, on_screen=True)
        await self._in_thread(self._store().rename, old, new)

    async def delete_key(self, key: str) -> None:
        """Move ``key``'s folder (and its forks') to ``<data dir>/trash``."""
        from selfref_tui.selfref.errors import StoreError

        if key == self.key:
            raise StoreError("This conversation is on screen; switch to another one, then "
                             "delete it.")
        await self._in_thread(self._store().trash, key)

    # ------------------------------------------------ reading, letting go

    async def _reading(self, key: str, fn: Callable[..., T], *args: Any) -> T | None:
        """``fn(*args)`` in a store thread that reads ``key`` through the agent; None
        (nothing run) when ``key`` is not loaded or is being let go.

        The agent opens a key that is not loaded, lock and all: a token count of
        the previous key still in its thread when a switch let that key go opened
        it again, and it stayed locked (deleting or renaming it was refused, and
        another window could not write it). So a reader starts only on a loaded
        key, and :meth:`_let_go` waits for the ones under way.
        """
        if key in self._letting_go or key not in self._store().open_keys():
            return None
        future = self._thread(fn, *args)
        readers = self._readers.setdefault(key, set())
        readers.add(future)
        future.add_done_callback(readers.discard)
        return await asyncio.shield(future)

    async def _let_go(self, key: str, *, on_screen: bool = False) -> None:
        """Release ``key`` once no reader of it runs (:meth:`_reading`).

        Left loaded when it is the key on screen again by then, unless
        ``on_screen`` (a rename lets the key on screen go). A cancelled caller
        releases it at once (the wait never cancels the readers' threads).
        """
        self._letting_go.add(key)
        try:
            readers = self._readers.pop(key, set())
            if readers:
                await asyncio.wait(readers)
        finally:
            self._letting_go.discard(key)
            if on_screen or key != self.key:
                self._agent().release(key)

    # ----------------------------------------------------------- refusals

    def check_ready(self) -> None:
        """Refuse (:class:`Refused`) until the runtime runs and the key is open."""
        if not self.ready:
            raise Refused(STARTING)
        if self.key_error:
            raise Refused(self.key_error, "error")

    def check_writable(self, what: str) -> None:
        """Refuse ``what`` in a read-only window (it would write the store)."""
        if self.read_only:
            raise Refused(
                f"Read-only window (--read-only): it cannot {what}. Quit, and start "
                "selfref-tui without --read-only once no other window writes this conversation."
            )

    # -------------------------------------------------------- early inputs

    def keep_early(self, text: str, images: Sequence[str] = ()) -> None:
        """Keep a message typed before the runtime runs, to send once the key is open.

        A message with images is refused instead: it stays in the input.
        """
        if images:
            raise Refused("Still starting up; your message and its images stay in the "
                          "input — send them in a moment.")
        self._early.append(text)

    @property
    def early_inputs(self) -> list[str]:
        """Messages typed before the runtime was ready, not sent yet."""
        return list(self._early)

    def take_early_inputs(self) -> list[str]:
        """The early messages, once: the caller sends them (``submit``) and shows them."""
        early, self._early = self._early, []
        return early


def _remember_shown(data_dir: Any, key: str) -> str | None:
    from selfref_tui.selfref.last_used import write_last_key

    return write_last_key(data_dir, key)


__all__ = ["KeyLifecycle", "OpenedKey"]
