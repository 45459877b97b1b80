"""The chat controller: one window's runtime, its key on screen, and the person's input.

What a front end does with a person's input — start the runtime, open a key,
switch to another, let one go, keep what was typed before the runtime was
ready, refuse what a read-only window or an unavailable key cannot do — has
nothing to do with how it is drawn. It lives here, without a Textual import,
so it is tested without a screen (real store files, the in-package server
over HTTP) and the app only shows what it returns.

Three parts, one module each: :mod:`~selfref_tui.agent.chat.startup` builds the
runtime after the first frame and closes it; :mod:`~selfref_tui.agent.chat.key_lifecycle`
holds the key on screen (open, switch, let go, rename, trash, early inputs);
:mod:`~selfref_tui.agent.chat.conversation_settings` runs it on the model, profile
and instructions it remembers (``/model``, ``/profile``, ``/instructions``).
This class adds what the person does with them: send, compact, retry, stop,
answer, remember, and what the screen reads.

Refusals are :class:`Refused` exceptions whose message is the one line the
person reads; the app shows it as a notification. Everything slow (the store,
imports) runs in a thread, so a caller on the UI's loop is never held up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from selfref_tui.config import AppConfig
from selfref_tui.safety import name_line

from .conversation_settings import ConversationSettings
from .key_lifecycle import KeyLifecycle, OpenedKey
from .refusals import STARTING, KeyOpenError, Refused, Severity
from .startup import PROVIDER_CHECK_S, Startup
from .steering import Rewound, Steering

if TYPE_CHECKING:
    from selfref_tui.agent.protocols import MemoryLike
    from selfref_tui.agent.turn.inbox import Message


@dataclass(frozen=True)
class SidebarLists:
    """The sidebar's two lists for the key on screen."""

    experiences: list[dict]
    #: every occurrence of every ref, oldest first; ``superseded`` when a later one replaced it
    refs: list[dict]


class ChatController(Startup, KeyLifecycle, ConversationSettings, Steering):
    """One window's runtime: the agent, its router, the key on screen and its lifecycle."""

    def __init__(self, config: AppConfig, *, read_only: bool = False) -> None:
        Startup.__init__(self, config, read_only=read_only)
        KeyLifecycle.__init__(self, config.key)
        #: the switcher's content filter, while it is open (conversation_search.py)
        self._search: Any = None
        self.unsent = []

    # ------------------------------------------------------------- input

    def submit(self, text: str, images: Sequence[str] = (), names: Sequence[str] = ()
               ) -> Literal["early", "started", "queued"]:
        """Send a message: a new turn, or queued into the running one.

        Before the runtime is ready it is kept (``"early"``) and goes out, in
        order, when :meth:`take_early_inputs` is called once the key is open.
        ``images`` (``data:`` URLs) go with it, ``names`` their files' names; a
        message with images is not kept early (refused: it stays in the input until
        the key is open).
        """
        if not self.ready:
            self.keep_early(text, images)
            return "early"
        self.check_ready()
        self.check_writable("send messages")
        return self._router().submit(text, images, names)  # type: ignore[return-value]

    def compact(self, focus: str = "") -> str:
        """``/compact [FOCUS]``: ``"started"`` (a compaction turn) or ``"queued"`` (at the
        next step); :class:`Refused` when the window is too small to offer the ``compact``
        tool. ``focus`` reaches the model in the note that asks it."""
        self.check_ready()
        self.check_writable("/compact")
        outcome = self._router().request_compaction(focus)
        if outcome == "refused":
            from selfref_tui.agent.tools.offer import COMPACT_REFUSED

            raise Refused(f"{COMPACT_REFUSED[0].upper()}{COMPACT_REFUSED[1:]}; set "
                          "context_window if the model has a larger window.")
        return outcome

    def retry(self) -> str:
        """Send the failed last message again: ``"started"``, ``"busy"`` or ``"nothing"``."""
        self.check_ready()
        return self._router().retry()

    def abort(self) -> list[Message] | None:
        """Stop the running turn (its partial answer is kept); None when none runs.

        The messages queued for it that the model has not seen yet, oldest first:
        they are not sent (Esc means stop); the app puts them back in the input.
        """
        return None if self.router is None else self.router.interrupt()

    def answer(self, question_id: str, choice: str) -> None:
        """A tool's question answered by the person."""
        if self.router is not None:
            self.router.answer(question_id, choice)

    def remember(self, text: str) -> str:
        """The person adds an experience; its id."""
        self.check_ready()
        self.check_writable("/remember")
        return self._agent().remember_experience(self.key, text)

    def forget(self, exp_id: str) -> bool:
        """The person removes an experience; False when there is none by that id."""
        self.check_ready()
        self.check_writable("forget experiences")
        return self._agent().forget_experience(self.key, exp_id)

    def pin(self, n: int, pinned: bool = True) -> bool:
        """Pin (or unpin) message ``n`` of the key on screen; False when it already was.

        :class:`Refused` when there is no message ``n``.
        """
        self.check_ready()
        self.check_writable("pin messages" if pinned else "unpin messages")
        from selfref_tui.selfref.errors import StoreError

        memory = self._agent().memory(self.key)
        try:
            return memory.set_pinned(n, pinned)
        except StoreError as exc:  # the disk refused the record: nothing changed
            raise Refused(str(exc), "error") from None
        except IndexError:
            if memory.is_hidden(n):  # a live call's item keeps it (context.history)
                raise Refused(f"Message {n} held only a tool call, whose result with images "
                              "follows it: pin that instead.") from None
            last = memory.last_number
            raise Refused(f"No message {n} in this conversation"
                          + (f" (its messages are numbered 1 to {last})." if last else ".")
                          ) from None

    def pins(self) -> frozenset[int]:
        """The pinned message numbers of the key on screen (none while no key is open)."""
        if self.agent is None or self.key_error:
            return frozenset()
        try:
            return frozenset(getattr(self.agent.memory(self.key), "pins", ()))
        except Exception:
            return frozenset()

    def edit_experience(self, exp_id: str, text: str) -> bool:
        """The person corrects an experience's text; False when there is none by that id."""
        self.check_ready()
        self.check_writable("edit experiences")
        return self._agent().edit_experience(self.key, exp_id, text)

    # ----------------------------------------------------------- reading

    def preview(self) -> Any:
        """Exactly what the next request of the key on screen carries (``RequestPlan``)."""
        self.check_ready()
        return self._agent().preview_request(self.key)

    async def usage(self) -> tuple[str, int, int, bool] | None:
        """(key, tokens, window, estimated) of the next call, counted in a thread.

        None when there is nothing to count now (no runtime yet, no key open, the key
        let go meanwhile); :class:`Refused` saying why when the count itself failed, so
        the meter can say so instead of counting for good."""
        if self.agent is None or self.key_error:
            return None
        key, agent = self.key, self.agent
        from selfref_tui.context.tokens import CountingStopped

        try:
            plan = await self._reading(key, agent.preview_request, key)
        except CountingStopped:  # the window is closing: nobody waits for this figure
            return None
        except Exception as exc:
            from selfref_tui.safety import one_line

            raise Refused(f"The context of conversation '{name_line(key)}' could not be counted: "
                          f"{one_line(exc, 300)}", "error") from exc
        if plan is None:  # the key was let go meanwhile: counting would open it again
            return None
        return key, plan.tokens, agent.context_window, plan.estimated

    def sidebar_lists(self, memory: MemoryLike | None = None) -> SidebarLists | None:
        """The key's experiences and refs; None while no key is open."""
        if memory is None:
            if self.agent is None or self.key_error:
                return None
            try:
                memory = self.agent.memory(self.key)
            except Exception:
                return None
        rows: list[dict] = []
        for ref_id, occurrences in memory.refs.items():
            for index, occurrence in enumerate(occurrences):
                rows.append(
                    {
                        "id": ref_id,
                        "content": occurrence.get("content", ""),
                        "superseded": index < len(occurrences) - 1,
                        "order": occurrence.get("message_index", 0),
                    }
                )
        rows.sort(key=lambda r: r["order"])
        return SidebarLists(list(memory.experiences), rows)

    async def search_conversations(self, text: str) -> list[tuple[str, int, str]]:
        """The conversations whose messages hold ``text`` (the switcher's content filter):
        each with how many do and the newest one's snippet, latest activity first. What
        was read is kept for the next call, until :meth:`end_search`."""
        from selfref_tui.context.recall import RecallError
        from selfref_tui.selfref.conversation_search import ConversationSearch

        if self._search is None:
            self._search = ConversationSearch(self._store().data_dir)
        search = self._search
        try:
            found = await self._in_thread(search.search, text, limit=1)
        except RecallError:
            return []
        return [(key, count, next(m.snippet for m in found.matches if m.key == key))
                for key, count in found.counts.items()]

    async def end_search(self) -> None:
        """Let go of what the content filter read (its caches written in a thread)."""
        search, self._search = self._search, None
        if search is not None:
            try:
                await self._in_thread(search.close)
            except Refused:  # the window is closing: the caches wait for another search
                pass

    def conversation_size(self) -> int:
        """How many numbered messages the key on screen holds (what ``/save`` writes)."""
        self.check_ready()
        return len(self._agent().memory(self.key).entries())

    async def export_conversation(self, key: str, target: Path) -> tuple[str, list[tuple[Path,
                                                                                      bytes]]]:
        """``key`` as the file ``target`` (Markdown, or JSON for a ``.json`` name), made in
        a thread: the text, and the images to write beside it (Markdown only)."""
        from selfref_tui.context.conversation_export import images_folder, to_json, to_markdown

        memory = self._agent().memory(key)

        def render() -> tuple[str, list[tuple[Path, bytes]]]:
            entries, compactions = memory.entries(), memory.compactions()
            if target.suffix.lower() == ".json":
                from selfref_tui.safety import json_inert

                return json_inert(to_json(key, entries, compactions=compactions)), []
            folder = images_folder(target.name)
            exported = to_markdown(key, entries, images_dir=folder, compactions=compactions)
            return exported.text, [(target.parent / folder / image.name, image.data)
                                   for image in exported.images]

        return await self._in_thread(render)

    def ref_content(self, ref_id: str) -> str | None:
        """The latest content of ``ref:ID`` in the key on screen; None when there is none."""
        self.check_ready()
        occurrences = self._agent().memory(self.key).refs.get(ref_id.removeprefix("ref:"))
        return occurrences[-1].get("content", "") if occurrences else None

    # ------------------------------------------------------------ settings

    def save_theme(self, name: str) -> bool:
        """Keep the person's theme for the next start: ``theme = "NAME"`` in config.toml.

        Written by the one config writer (selfref/config_file.py), which changes that
        line and nothing else; False when the file already said so. Blocking (a file
        write): call it in a thread. Raises ``ConfigError`` with the line to show.
        """
        from selfref_tui.config import default_config_path
        from selfref_tui.selfref.config_file import set_config_value

        path = self.config.config_path or default_config_path()
        changed = set_config_value(path, (), "theme", name)
        self.config = replace(self.config, theme=name)
        return changed


def typed_inputs(history: Sequence[dict]) -> list[str]:
    """What the person typed in ``history``, oldest first (Up recalls it).

    Summaries and the runtime's own notes are user messages too, but nobody
    typed them.
    """
    return [
        m["content"]
        for m in history
        if m.get("role") == "user"
        and isinstance(m.get("content"), str)
        and m.get("compaction") is None
        and not m.get("runtime_note")
    ]


__all__ = [
    "PROVIDER_CHECK_S",
    "STARTING",
    "ChatController",
    "KeyOpenError",
    "OpenedKey",
    "Refused",
    "Rewound",
    "Severity",
    "SidebarLists",
    "typed_inputs",
]
