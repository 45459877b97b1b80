"""The person steers from the app: rewind, undo, edit, regenerate, branch.

A mixin of :class:`~selfref_tui.ui.app.SelfRefApp`. The controller does each
one (``agent/chat/steering.py``); this shows it: the transcript is drawn again
from the store (the rewound messages collapsed in a marked section), a
person's message rewound to comes back into the input with its images, what
left the context is said in one notification, and the files the model wrote
after that point are offered for restoring. Every rewind can be undone
(``/rewind undo``, or the actions on the rewound section), so no key press
loses work.

Keys (``keymap.py``): F8 the actions on the highlighted message (or the last),
F9 edit your last (or highlighted) message, F5 retry a failed turn or else
regenerate the last answer, Esc Esc while idle the list of your messages to
rewind to. (F6 and F7 are the input's own: select line, select all.)
"""

from __future__ import annotations

from itertools import zip_longest
from typing import TYPE_CHECKING, Any

from textual import work

from selfref_tui.agent.chat.refusals import Refused
from selfref_tui.safety import inert, inert_line, name_line

if TYPE_CHECKING:
    from collections.abc import Sequence

    from selfref_tui.agent.chat.controller import ChatController
    from selfref_tui.agent.turn.inbox import Message
    from selfref_tui.selfref.rewind import RewindReport
    from selfref_tui.ui.transcript.model import Item
    from selfref_tui.ui.widgets.chat_input import ChatInput
    from selfref_tui.ui.widgets.transcript import Transcript

#: a second Esc this soon after one that stopped nothing opens the rewind list
ESC_DOUBLE_S = 0.6
#: characters of a message shown in the rewind list: its row stays one line
ROW_TEXT = 48


class SteerActions:
    """Rewind, undo, edit, regenerate and branch, on screen."""

    #: what the newest rewind put into the input: (its key, the input after, the draft
    #: before, the draft's images), for its undo to take out again; None once another
    #: rewind, regenerate or undo came after it (their undo is not its undo)
    _put_back: tuple[str, str, str, dict[int, Any]] | None = None

    if TYPE_CHECKING:  # provided by SelfRefApp and its other mixins
        controller: ChatController
        transcript: Transcript
        chat_input: ChatInput
        key: str
        tail_items: int

        def notify(self, message: str, **kwargs: Any) -> None: ...
        def call_later(self, callback: Any, *args: Any) -> Any: ...
        def refused(self, exc: Refused, extra: str = "") -> None: ...
        def pin_message(self, n: int | None, pinned: bool = True) -> bool: ...
        def _refresh_sidebar(self, memory: Any | None = None) -> None: ...
        def _refresh_usage(self) -> Any: ...
        async def push_screen_wait(self, screen: Any) -> Any: ...
        async def switch_key(self, key: str) -> bool: ...
        async def _show_sent(self, text: str, outcome: str,
                             images: Any = ()) -> None: ...

    # ----------------------------------------------------------------- the steps

    async def rewind_to(self, n: int) -> bool:
        """Rewind to just before message ``n``; a person's message comes back to edit."""
        try:
            done = await self.controller.rewind(n)
        except Refused as exc:
            self.refused(exc)
            return False
        await self.show_rewind(done.report)
        if done.text or done.images:
            self._into_input(done.text, done.images, done.names, undone_with=True)
        return True

    async def undo_rewind(self) -> bool:
        put_back = self._put_back  # the rewind undone now: the newest (show_rewind forgets)
        try:
            report = await self.controller.undo_rewind()
        except Refused as exc:
            self.refused(exc)
            return False
        await self.show_rewind(report)
        self.call_later(self._take_back_from_input, put_back)
        return True

    async def edit_message(self, n: int | None = None) -> bool:
        """``/edit``, F9: your message ``n`` (default: your last) back into the input."""
        try:
            done = await self.controller.edit(n)
        except Refused as exc:
            self.refused(exc)
            return False
        await self.show_rewind(done.report)
        self._into_input(done.text, done.images, done.names, undone_with=True)
        return True

    async def regenerate(self) -> bool:
        """``/regenerate``: your last message sent again as it was; the old answer is kept,
        rewound."""
        try:
            done, outcome = await self.controller.regenerate()
        except Refused as exc:
            self.refused(exc)
            return False
        await self.show_rewind(done.report, quiet=True)
        await self._show_sent(done.text, outcome, [
            (url, name or "image") for url, name in zip_longest(done.images, done.names)])
        self.notify("Asked again; the earlier answer is kept in the rewound section.")
        return True

    async def branch_from(self, n: int | None, name: str | None = None) -> bool:
        """A new key from the state before message ``n`` (None: all of it), opened on screen."""
        from selfref_tui.selfref.keys import validate_name
        from selfref_tui.ui.screens.new_key_prompt import NewKeyPrompt

        where = f"before message {n}" if n else "at the end of the conversation"
        try:
            suggested, existing = await self.controller.branch_names()
            if name is None:
                name = await self.push_screen_wait(NewKeyPrompt(
                    suggested, existing=existing, validate=validate_name,
                    title=f"New branch, {where}"))
                if not name:
                    return False
            await self.controller.branch(n, name)
        except Refused as exc:
            self.refused(exc)
            return False
        origin = self.key
        if await self.switch_key(name):
            shown = name_line(origin)
            self.notify(f"Branch {name_line(name)} of {shown}, {where}; {shown} is unchanged "
                        "(ctrl+o switches back).")
        return True

    async def show_rewind(self, report: RewindReport, *, quiet: bool = False) -> None:
        """The transcript again from the store, what changed said, files offered."""
        self._put_back = None  # a rewind after it: an undo now undoes that one
        await self.reload_transcript()
        self._queued_into_input(self.controller.unsent)  # queued for the stopped turn
        self.controller.unsent = []
        lines: list[str] = []
        undo: list[str] = []
        if not quiet:
            # the files are listed by the dialog offering them, and said after it
            first, *rest = report.lines(files=False)
            lines = [first[:1].upper() + first[1:], *rest]  # the command line's words, a sentence
            if report.message and not report.already:
                undo = ["/rewind undo brings it back."]
        if report.files:
            self._offer_restore(report, lines, undo)
        elif lines:
            self.notify("\n".join([*lines, *undo]), timeout=10)

    async def reload_transcript(self) -> None:
        """The key on screen drawn again from its store (after a rewind)."""
        memory = self.controller.agent.memory(self.key)
        await self.transcript.reset()
        self.transcript.set_pinned(getattr(memory, "pins", frozenset()))
        await self.transcript.load_history(memory.history, tail=self.tail_items,
                                           numbers=memory.history_numbers())
        self._refresh_sidebar(memory)
        self._refresh_usage()
        self.transcript.scroll_bottom()

    def queued_back(self, messages: Sequence[Message]) -> None:
        """Esc stopped a turn before the model saw these queued messages: they were never
        sent (the store never held them), so their rows leave the transcript and they go
        back into the input, as Esc means stop and no turn starts with them."""
        self.transcript.unqueue(len(messages))
        self._queued_into_input(messages)
        self.notify("Stopped; your queued message is back in the input." if len(messages) == 1
                    else "Stopped; your queued messages are back in the input.")

    def _queued_into_input(self, messages: Sequence[Message]) -> None:
        """Messages queued and never sent, back in the input ahead of the draft: their
        texts in the order they were sent, a blank line between, and their images."""
        from selfref_tui.context.images import named_images, text_of

        texts = [text for text in map(text_of, messages) if text]
        images = [pair for message in messages for pair in named_images(message)]
        if texts or images:
            self._into_input("\n\n".join(texts), [url for url, _ in images],
                             [name for _, name in images])

    def _into_input(self, text: str, images: list[str], names: Sequence[str] = (), *,
                    undone_with: bool = False) -> None:
        """A message back in the input, before whatever draft is there (nothing is lost).

        After the current message is handled: a slash command's own text is
        cleared from the input when its handler returns, and this must outlive it.
        ``undone_with``: the rewind that put it there takes it out again when undone,
        if it is still there untouched (see :meth:`_take_back_from_input`).
        The text comes from the store: its control characters are shown (and sent
        as shown), as a paste's are; a TextArea would write them to the terminal.
        """
        self.call_later(self._put_into_input, text, images, names, undone_with)

    def _put_into_input(self, text: str, images: list[str], names: Sequence[str] = (),
                        undone_with: bool = False) -> None:
        from selfref_tui.context.images import parse_data_url
        from selfref_tui.selfref.attach import Attachment

        chat = self.chat_input
        draft, draft_images = chat.text, dict(chat.images)
        if text:
            draft = chat.text
            chat.insert(inert(text) + ("\n\n" if draft.strip() else ""), location=(0, 0))
        for index, url in enumerate(images, 1):
            parsed = parse_data_url(url)
            if parsed is not None:
                mime, data = parsed
                name = names[index - 1] if index <= len(names) else ""
                chat.add_image(Attachment(name or f"image-{index}.{mime.rsplit('/', 1)[-1]}",
                                          mime, data))
        self._put_back = (self.key, chat.text, draft, draft_images) if undone_with else None
        chat.focus()

    def _take_back_from_input(self, put_back: tuple[str, str, str, dict[int, Any]] | None
                              ) -> None:
        """After an undo: the message the undone rewind put into the input leaves it, if
        the input still holds just what the rewind left there (the draft before it comes
        back). It stayed, and Enter sent it again: the same message twice in a row. Once
        edited it is the person's own text, and stays. ``put_back``: what the undone
        rewind put there (None: not a rewind that put anything, or one of another key)."""
        if put_back is None:
            return
        key, after, draft, draft_images = put_back
        chat = self.chat_input
        if key != self.key or chat.text != after:
            return
        chat.images = draft_images
        chat.text = draft
        chat.move_cursor(chat.document.end)

    # --------------------------------------------------------------- files

    @work(group="restore-files", exit_on_error=False)
    async def _offer_restore(self, report: RewindReport, said: list[str],
                             undo: list[str]) -> None:
        """The files ``report`` names, offered to restore; ``said`` (what the rewind did)
        is told once the dialog is closed, with what became of them, then ``undo`` (how
        to take the rewind back): a notice shown while the dialog is up lies over it."""
        from selfref_tui.ui.screens.restore_files import RestoreFiles

        standing = await self.controller.files_standing(report.files)
        rows = [(change.path, change.what_restoring_does(), why)
                for change, why in zip(report.files, standing, strict=True)]
        note = ""
        if report.mcp_tools:
            note = (f"MCP tools also ran there ({', '.join(report.mcp_tools)}): they may "
                    "have changed files that cannot be restored.")
        elif all(why == "already as it was" for _path, _what, why in rows):
            # a dialog with nothing to tick asks a question that has no answer
            if said:
                self.notify("\n".join([*said, *undo]), timeout=10)
            self.notify("The files the model wrote there are already as they were: "
                        "nothing to restore.")
            return
        chosen = await self.push_screen_wait(RestoreFiles(rows, note=note,
                                                          undo=not report.message))
        if not chosen:
            if said:
                self.notify("\n".join([*said, "The files the model wrote there are kept as "
                                        "they are.", *undo]), timeout=10)
            return
        done = await self.controller.restore_files([report.files[i] for i in chosen])
        lines = [*said, *done.lines(), *undo]
        self.notify("\n".join(lines) or "Nothing to restore.",
                    severity="warning" if done.skipped else "information", timeout=10)

    # ------------------------------------------------------- what is acted on

    def message_number(self, item: Item | None) -> int | None:
        """The stored number of ``item`` (a rewound section: its first message)."""
        if item is None:
            return None
        number = getattr(item, "first", 0) if item.kind == "rewound" else item.number
        if not number and item.owner is not None:
            number = item.owner.number
        return number or None

    def branch_point(self, item: Item | None) -> int | None:
        """Where a branch from ``item`` starts: before a message of yours (or a rewound
        section), just after anything else (the branch keeps that answer, and a call's
        results); None: all."""
        from selfref_tui.context.history import is_person_message

        n = self.message_number(item)
        if n is None or item is None or item.kind == "rewound":
            return n
        try:
            entry = self.controller.entry(n)
        except Refused:
            return n
        if entry is not None and not is_person_message(entry.message):
            n += 1
            try:  # after a call (or one of its results): past the rest of its results
                while (after := self.controller.entry(n)) is not None and after.role == "tool":
                    n += 1
            except Refused:
                pass
        return n

    # --------------------------------------------------------------- keys

    @work(exclusive=True, group="steer")
    async def action_message_actions(self) -> None:
        """F8: what can be done with the highlighted message (or the last one)."""
        from selfref_tui.ui.screens.choice_list import ChoiceList

        item = self.transcript.highlighted_item() or self._last_message_item()
        rows, about = self._actions_for(item)
        if not rows:
            self.notify("Nothing to act on in this conversation yet.")
            return
        chosen = await self.push_screen_wait(ChoiceList("Message", rows, about=about))
        if chosen:
            await self.run_message_action(chosen, item)

    def _last_message_item(self) -> Item | None:
        """The newest message on screen (or rewound section): what F8 acts on when
        nothing is highlighted."""
        for item in reversed(self.transcript.model.items):
            if item.kind == "rewound" or item.number:
                return item
        return None

    def _actions_for(self, item: Item | None) -> tuple[list[tuple[str, str]], str]:
        from selfref_tui.context.history import is_person_message

        rows: list[tuple[str, str]] = []
        try:
            n = self.message_number(item)
            last = self.controller.last_person_message()
            entry = self.controller.entry(n) if n else None
            undoable = self.controller.can_undo_rewind()
        except Refused as exc:
            return [], str(exc)
        if item is not None and item.kind == "rewound":
            shown = getattr(item, "expanded", False)
            rows.append(("toggle", "Hide the rewound messages" if shown
                         else "Show the rewound messages"))
            rows.append(("undo", "Undo the last rewind (its messages come back)"))
            if n:
                rows.append(("branch", "Branch from here: a new conversation from before "
                                       f"message {n}"))
            return rows, f"Rewound messages #{n}…" if n else "Rewound messages"
        if entry is not None:
            mine = is_person_message(entry.message)
            rows.append(("rewind", f"Rewind to here: the context goes back to just before "
                                   f"message {entry.n}" + (" (its text comes back to edit)"
                                                           if mine else "")))
            if mine:
                rows.append(("edit", "Edit and resend this message"))
            rows.append(("branch", "Branch from here: a new conversation from before message "
                                   f"{entry.n}" if mine else
                                   f"Branch from here: a new conversation up to message {entry.n}"))
            if not entry.rewound:  # pin_actions.py
                rows.append(("unpin", "Unpin: compactions summarise it again") if entry.pinned
                            else ("pin", "Pin: every compaction keeps it verbatim"))
        if last is not None:
            rows.append(("regenerate", "Regenerate the last answer (the old one is kept, "
                                       "rewound)"))
        if undoable:
            rows.append(("undo", "Undo the last rewind"))
        about = ""
        if entry is not None:
            text = inert_line(str(item.copy_text if item is not None else ""), 70)
            about = f"#{entry.n} {entry.role}: {text}"
        return rows, about

    async def run_message_action(self, action: str, item: Item | None) -> None:
        n = self.message_number(item)
        if action == "toggle" and item is not None and item.kind == "rewound":
            self.transcript.toggle_section(item)  # type: ignore[arg-type]
        elif action == "undo":
            await self.undo_rewind()
        elif action == "rewind" and n:
            await self.rewind_to(n)
        elif action == "edit" and n:
            await self.edit_message(n)
        elif action == "regenerate":
            await self.regenerate()
        elif action == "branch":
            await self.branch_from(self.branch_point(item))
        elif action in ("pin", "unpin") and n:
            self.pin_message(n, action == "pin")

    @work(exclusive=True, group="steer")
    async def action_edit_last(self) -> None:
        """F9: the highlighted message of yours, or your last, back into the input."""
        from selfref_tui.context.history import is_person_message

        item = self.transcript.highlighted_item()
        n = self.message_number(item)
        try:
            entry = self.controller.entry(n) if n else None
        except Refused as exc:
            self.refused(exc)
            return
        if entry is not None and not is_person_message(entry.message):
            n = None  # an answer is highlighted: your last message
        await self.edit_message(n)

    @work(exclusive=True, group="steer")
    async def pick_rewind(self) -> None:
        """``/rewind`` alone, Esc Esc: your recent messages; the chosen one comes back to edit."""
        from selfref_tui.ui.screens.choice_list import ChoiceList

        try:
            recent = self.controller.recent_person_messages()
            undoable = self.controller.can_undo_rewind()
        except Refused as exc:
            self.refused(exc)
            return
        if not recent and not undoable:
            self.notify("Nothing to rewind to: no message of yours in this conversation yet.")
            return
        from selfref_tui.context.images import text_of
        from selfref_tui.context.local_time import shown_time

        # One line a row, the times in one column: a row of 60 characters wrapped, its
        # second line under the number, and "#5" stood a column left of "#16"
        wide = max((len(str(e.n)) for e in recent), default=1)
        rows = [(str(e.n), f"#{e.n:<{wide}}  {shown_time(e.time, '%H:%M')}  "
                 f"{inert_line(text_of(e.message.get('content')), ROW_TEXT)}") for e in recent]
        if undoable:  # also when every message was rewound: the way back
            rows.append(("undo", "Undo the last rewind"))
        chosen = await self.push_screen_wait(ChoiceList(
            "Rewind to", rows, about="The context goes back to just before the message you "
            "choose; its text comes back into the input. Nothing is deleted."))
        if chosen == "undo":
            await self.undo_rewind()
        elif chosen:
            await self.rewind_to(int(chosen))
