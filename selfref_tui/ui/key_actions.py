"""The memory key on screen and the person's keys: open, new, switch, rename, delete.

The controller (``agent/chat/controller.py``) decides and touches the store; this
mixin shows it: the loading state, the key's history, experiences, refs and
forks, and the dialogs (new key name, the key switcher with its F2 rename and
delete).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual import work

from selfref_tui.agent.chat.controller import STARTING, KeyOpenError, Refused, typed_inputs
from selfref_tui.ui.empty_hint import empty_hint

if TYPE_CHECKING:
    from selfref_tui.agent.chat.controller import ChatController
    from selfref_tui.config import AppConfig
    from selfref_tui.ui.widgets.app_header import AppHeader
    from selfref_tui.ui.widgets.chat_input import ChatInput
    from selfref_tui.ui.widgets.fork_panel import ForkPanel
    from selfref_tui.ui.widgets.sidebar import Sidebar
    from selfref_tui.ui.widgets.transcript import Transcript


class KeyActions:
    """ctrl+n, ctrl+o, ``/key`` and ``/new``, and showing the key that opens."""

    if TYPE_CHECKING:  # what the app provides
        controller: ChatController
        config: AppConfig
        key: str
        ready: bool
        key_error: str | None
        read_only: bool
        tail_items: int
        header: AppHeader
        sidebar: Sidebar
        transcript: Transcript
        chat_input: ChatInput
        fork_panel: ForkPanel

        def notify(self, message: str, **kwargs: Any) -> None: ...
        def refused(self, exc: Refused, extra: str = "") -> None: ...
        def _key_label(self, binding_id: str | None, default: str) -> str: ...
        def _refresh_sidebar(self, memory: Any | None = None) -> None: ...
        def _refresh_usage(self) -> Any: ...
        def collect_when_idle(self, *, everything: bool = False) -> None: ...
        def provider_switched(self) -> None: ...
        def close_find(self) -> None: ...
        async def find_text(self, text: str) -> None: ...
        def forks_of_another_conversation(self) -> None: ...
        async def push_screen_wait(self, screen: Any) -> Any: ...

    async def open_key(self, key: str) -> bool:
        """Show ``key``: its history (tail first), experiences, refs and forks."""
        self.header.key, self.header.status = key, "loading…"
        self.sidebar.experiences = self.sidebar.refs = None  # "Loading…", not "nothing"
        self.sidebar.meter.forget_last_answer()
        self.sidebar.meter.show_counting()  # the last key's figures are not this one's
        self.close_find()  # its marks and count were the last conversation's
        await self.transcript.reset()
        self.fork_panel.clear()
        self.forks_of_another_conversation()
        try:
            opened = await self.controller.open_key(key)
        except KeyOpenError as exc:
            self.header.status = "unavailable"
            self.sidebar.experiences = self.sidebar.refs = ()  # not "loading…" forever
            self.sidebar.meter.show_unavailable(str(exc))  # nor "counting…"
            await self.transcript.add_error(str(exc), "store")  # said there, once
            return False
        except Refused:  # (after KeyOpenError, one of them)
            if self.controller.closed:  # quit while it opened: the window is going
                return False
            raise
        if opened.salvaged:
            await self.transcript.add_error(opened.salvaged, "store")
        for warning in opened.warnings:  # skipped damaged records, a torn write
            self.notify(warning, title="Conversation", severity="warning", timeout=15)
        if opened.provider_changed:  # the key runs on the model it chose last
            self.provider_switched()
        memory = opened.memory
        # Early inputs are about to be sent: no hint to flash up before them.
        early = self.controller.early_inputs
        self.transcript.set_empty_hint(
            "" if early else empty_hint(key, self._key_label, demo=self.config.provider.demo)
        )
        self.transcript.set_pinned(getattr(memory, "pins", frozenset()))
        await self.transcript.load_history(memory.history, tail=self.tail_items,
                                           numbers=memory.history_numbers())
        self.chat_input.recall_from(typed_inputs(memory.history))
        self._refresh_sidebar(memory)
        forks = getattr(memory, "forks", {}) or {}
        if forks:
            self.fork_panel.load_forks(forks.values())
        self.header.status = "ready"
        self._refresh_usage()
        # the model's first search finds it done; begun once the key's end is on screen,
        # so the thread never holds up drawing it
        self.call_after_refresh(self.controller.prepare_search, key)
        # loading a long history leaves garbage behind too, and so may the last key
        self.collect_when_idle(everything=True)
        return True

    def action_new_key(self) -> None:
        # A locked or damaged key is exactly when a fresh one is wanted: only start-up waits.
        self._new_key()

    @work(exclusive=True, group="switch")
    async def _new_key(self) -> None:
        """Ask for the new key's name (a free ``chat-N`` suggested), then open it."""
        from selfref_tui.selfref.keys import validate_name
        from selfref_tui.ui.screens.new_key_prompt import NewKeyPrompt

        if not self.ready:
            self.refused(Refused(STARTING))
            return
        try:
            suggested, existing = await self.controller.new_key_names()
        except Refused as exc:
            self.refused(exc)
            return
        name = await self.push_screen_wait(
            NewKeyPrompt(suggested, existing=existing, validate=validate_name)
        )
        if name:
            await self.switch_key(name)

    @work(exclusive=True, group="switch")
    async def action_switch_key(self) -> None:
        if not self.ready:  # a key that failed to open is when another is wanted
            self.refused(Refused(STARTING))
            return
        from selfref_tui.selfref.keys import validate_name
        from selfref_tui.ui.screens.key_switcher import KeySwitcher

        manage = not self.read_only
        switcher = KeySwitcher(
            await self.controller.person_keys(),
            self.key,
            validate=validate_name,
            rename=self._rename_key if manage else None,
            delete=self._delete_key if manage else None,
            search=self.controller.search_conversations,
        )
        try:
            chosen = await self.push_screen_wait(switcher)
        finally:
            await self.controller.end_search()
        if chosen and await self.switch_key(chosen) and switcher.content_query:
            await self.find_text(switcher.content_query)  # what it was chosen by, found

    async def _rename_key(self, old: str, new: str) -> list[dict[str, Any]]:
        """The switcher's F2: the key on screen is let go, renamed, and opened again."""
        shown = old == self.key
        if shown and self.controller.busy:
            from selfref_tui.selfref.errors import StoreError

            raise StoreError("A turn is running; press Esc first, then rename.")
        try:
            await self.controller.rename_key(old, new)
        except Exception:
            if shown:
                await self.open_key(old)
            raise
        if shown:
            await self.open_key(new)
        return await self.controller.person_keys()

    async def _delete_key(self, key: str) -> list[dict[str, Any]]:
        """The switcher's delete: the key's folder goes to ``<data dir>/trash``."""
        await self.controller.delete_key(key)
        return await self.controller.person_keys()

    async def switch_key(self, key: str) -> bool:
        """``key`` on screen (``/key``, the switcher, a new key); False when refused."""
        try:
            needed = self.controller.check_switch(key)
        except Refused as exc:
            self.refused(exc)
            return False
        return await self.open_key(key) if needed else True
