"""Switch memory key: type to filter, arrows to pick, or type a new name.

The same list renames (F2) and deletes (shift+Delete or F8, after a ``y``) a
key. Both go through callbacks the app passes in, so the screen never touches
the store; a deleted key's files are moved to the data dir's trash folder.

ctrl+f turns the filter to the conversations' content: the list shows those
whose messages hold the text (how many, and the newest match), asked of the
``search`` callback as one types; Enter opens one, and the app finds the text
in it (:attr:`KeySwitcher.content_query`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, ClassVar

from rich.cells import cell_len
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from selfref_tui.context.recall import fit_snippet
from selfref_tui.safety import content, inert_line, name_line
from selfref_tui.selfref.keys import without_hidden
from selfref_tui.ui.screens.filtered_list import FilteredListScreen, FilterField, filter_by_name
from selfref_tui.ui.widgets.lazy_option_list import LazyOptionList

NEW_PREFIX = "new:"
KEY_PREFIX = "key:"
#: the widest the names' column grows to line up what follows them
NAME_COLUMN = 24

#: ``rename(old, new)`` / ``delete(key)``: do it, return the fresh key list, or raise an
#: Exception whose message is one line for the person
Rename = Callable[[str, str], Awaitable[Sequence[Mapping[str, Any]]]]
Delete = Callable[[str], Awaitable[Sequence[Mapping[str, Any]]]]
#: ``search(text)``: the conversations whose messages hold ``text``, in order, each with
#: how many do and the newest one's snippet; raises with a one-line message
Search = Callable[[str], Awaitable[Sequence[tuple[str, int, str]]]]


def filter_keys(keys: Sequence[Mapping[str, Any]], query: str) -> list[Mapping[str, Any]]:
    """Case-insensitive substring match; names starting with the query come first."""
    return filter_by_name(keys, query, lambda k: str(k.get("key", "")))


class KeySwitcher(FilteredListScreen):
    """Dismisses with the chosen key name, a newly typed one, or None (Esc)."""

    DEFAULT_CSS = """
    /* what the dialog (80% of the screen) has left under its field and over its hint: 16
       rows ran past it at 80x24, the hint and the highlighted row out of sight */
    KeySwitcher OptionList { max-height: 28vh; }
    KeySwitcher OptionList > .option-list--option { padding: 0 1; }
    KeySwitcher OptionList > .option-list--option-highlighted {
        background: $primary 30%;
        color: $text;  /* the theme's text can be too faint on this tint (solarized-dark) */
        text-style: none;
    }
    KeySwitcher #error { color: $text-error; height: auto; padding: 0 1; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="keys.cancel"),
        Binding("down", "move(1)", "Next", show=False, id="keys.down"),
        Binding("up", "move(-1)", "Previous", show=False, id="keys.up"),
        Binding("f2", "rename", "Rename", show=False, id="keys.rename"),
        Binding("shift+delete,f8", "delete", "Delete", show=False, id="keys.delete"),
        Binding("ctrl+f", "content", "Content", show=False, id="keys.content"),
    ]

    def __init__(
        self,
        keys: Sequence[Mapping[str, Any]],
        current: str,
        *,
        validate: Callable[[str], object] | None = None,
        rename: Rename | None = None,
        delete: Delete | None = None,
        search: Search | None = None,
    ) -> None:
        """``validate`` raises (any Exception, with a one-line message) on a bad new name."""
        super().__init__()
        self.keys = [dict(k) for k in keys if k.get("key")]
        self.current = current
        self._validate = validate
        self._rename = rename
        self._delete = delete
        #: the key being renamed while the field holds its new name; None: filtering
        self.renaming: str | None = None
        #: the key the highlight goes back to when the list shows again unfiltered
        self._select: str | None = None
        self._search = search
        #: the filter looks in the conversations' messages, not their names
        self.by_content = False
        #: the text a conversation was chosen by (content filter), for the app to find
        self.content_query = ""

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = "Conversations"
            yield FilterField(placeholder="filter, or type a new conversation's name", id="filter")
            yield LazyOptionList()  # (hundreds of conversations: only those seen are wrapped)
            yield Static("", id="error")
            yield Static(
                self._hint(),
                id="hint",
            )

    def _hint(self) -> Content:
        if self.renaming is not None:
            return Content.assemble(
                ("enter", "bold $text-primary"), " rename   ",
                ("esc", "bold $text-primary"), " back"
            )
        parts: list[str | tuple[str, str]] = [
            ("↑↓", "bold $text-primary"),
            " choose  ",
            ("enter", "bold $text-primary"),
            # a text to find is no new conversation's name: Enter opens, and finds it there
            " open and find  " if self.by_content else " switch / create  ",
        ]
        if self._rename is not None:
            parts += [("f2", "bold $text-primary"), " rename  "]
        if self._delete is not None:
            parts += [("shift+del/f8", "bold $text-primary"), " delete  "]
        if self._search is not None:
            parts += [("ctrl+f", "bold $text-primary"),
                      " names  " if self.by_content else " content  "]
        parts += [("esc", "bold $text-primary"), " cancel"]
        return Content.assemble(*parts)

    @property
    def visible_keys(self) -> list[str]:
        """Option values in display order ("new:NAME" for the create row)."""
        return self.row_ids

    def _refilter(self, query: str) -> None:
        self.listed_for = query
        matches = filter_keys(self.keys, query)
        options: list[Option] = []
        name = query.strip()
        names = {str(k["key"]): name_line(str(k["key"]), 60) for k in matches}
        # the names in a column, so the counts and times below one another line up
        # (a ragged column read as one list of "name  N messages" sentences); a name
        # longer than NAME_COLUMN keeps its length
        column = min(NAME_COLUMN, max((cell_len(n) for n in names.values()), default=0))
        for k in matches:
            key = str(k["key"])
            count = k.get("messages", 0)
            details = f"{count} message{'' if count == 1 else 's'}"
            updated = _local(str(k["updated"])) if k.get("updated") else ""
            if updated:
                details += f" · {updated}"
            if k.get("origin"):  # a branch says where it came from
                details += f" · {k['origin']}"
            label = Content.assemble(
                ("● " if key == self.current else "  ", "$text-primary"),
                (names[key], "bold"),
                " " * (max(column - cell_len(names[key]), 0) + 2),
                (inert_line(details), "$text-muted"),
            )
            options.append(Option(label, id=KEY_PREFIX + key))
        if name and all(str(k["key"]) != name for k in self.keys):
            # Last, so Enter after a partial filter picks the existing match.
            options.append(
                Option(
                    Content.assemble(
                        ("+ new conversation ", "$text-muted"),
                        (name_line(name, 60), "bold $text-primary"),
                    ),
                    id=NEW_PREFIX + name,
                )
            )
        self._show(options, select=None if query else KEY_PREFIX + (self._select or ""))

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        self.query_one("#error", Static).update("")
        if self.renaming is None and self.by_content:
            self._find_content(event.value)
        elif self.renaming is None:
            self._refilter(event.value)
            if event.value:
                self._select = None  # typing a filter starts from its first match

    # -- the content filter ------------------------------------------------------------

    def action_content(self) -> None:
        """ctrl+f: filter by what the conversations say, or by their names again."""
        if self._search is None or self.renaming is not None:
            return
        self.by_content = not self.by_content
        field = self.query_one(Input)
        field.placeholder = ("text in the conversations" if self.by_content
                             else "filter, or type a new conversation's name")
        self.query_one("#dialog").border_title = (
            "Conversations · by content" if self.by_content else "Conversations")
        self.query_one("#hint", Static).update(self._hint())
        if self.by_content:
            self._find_content(field.value)
        else:
            self._refilter(field.value)

    @work(exclusive=True, group="keys.content")
    async def _find_content(self, text: str) -> None:
        option_list = self.option_list
        if not text.strip():
            option_list.set_options([])
            option_list.display = False
            return
        assert self._search is not None
        try:
            found = await self._search(text)
        except Exception as error:  # a one-line message meant for people
            self._say(str(error))
            return
        if not self.by_content or self.query_one(Input).value != text:
            return  # typed on, or back to names, meanwhile
        options = []
        # "matches": by names the same column says how long a conversation is, and
        # "try-b  1 message" read as a conversation of one message
        rows = [(key, name_line(key, 30), f"{count} match{'es' if count != 1 else ''}",
                 snippet) for key, count, snippet in found]
        # names and counts in columns, as by names, so the snippets start in one column
        column = min(NAME_COLUMN, max((cell_len(row[1]) for row in rows), default=0))
        counts = max((len(row[2]) for row in rows), default=0)
        width = self.query_one("#dialog").size.width
        for key, name, matches, snippet in rows:
            # one line: the newest match's snippet gets what the name and count leave
            room = max(8, width - max(column, cell_len(name)) - counts - 12)
            options.append(Option(
                Content.assemble(
                    ("● " if key == self.current else "  ", "$text-primary"),
                    (name, "bold"),
                    " " * (max(column - cell_len(name), 0) + 2),
                    (matches.ljust(counts), "$text-accent"),
                    "  ",
                    (inert_line(fit_snippet(snippet, text, room), room), "$text-muted"),
                ),
                id=KEY_PREFIX + key,
            ))
        self._show(options)
        if not options:
            self._say("No conversation holds that text.")

    def catches_up(self) -> bool:
        # a new name being typed, or a text whose search is on its way, lists no names
        return self.renaming is None and not self.by_content

    def submit(self, value: str) -> None:
        if self.renaming is not None:
            self._do_rename(self.renaming, value.strip())
            return
        option = self.option_list.highlighted_option
        if option is not None and option.id:
            self._choose(option.id)
        elif value.strip():
            self._choose(NEW_PREFIX + value.strip())

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id:
            self._choose(event.option.id)

    def _choose(self, value: str) -> None:
        if value.startswith(KEY_PREFIX):
            if self.by_content:
                self.content_query = self.query_one(Input).value.strip()
            self.dismiss(value[len(KEY_PREFIX) :])
            return
        if self.by_content:
            return  # a text to find is not a new key's name
        name = value[len(NEW_PREFIX) :]
        if self._validate is not None:
            try:
                self._validate(name)
            except Exception as error:  # the validator's message is meant for people
                self.query_one("#error", Static).update(content(str(error)))
                return
        self.dismiss(name)

    def action_cancel(self) -> None:
        if self.renaming is not None:
            self._leave_rename(select=self.renaming)
            return
        self.dismiss(None)

    # -- rename and delete -------------------------------------------------------------

    def _highlighted_key(self) -> str | None:
        option = self.option_list.highlighted_option
        if option is None or not option.id or not option.id.startswith(KEY_PREFIX):
            return None
        return option.id[len(KEY_PREFIX) :]

    def _say(self, message: str, *, done: bool = False) -> None:
        self.query_one("#error", Static).update(
            content(message, "$text-success" if done else "", line=True)
        )

    def action_rename(self) -> None:
        key = self._highlighted_key()
        if self._rename is None or key is None or self.renaming is not None:
            return
        self.renaming = key
        self.query_one("#dialog").border_title = content(f"Rename {name_line(key)}", line=True)
        field = self.query_one(Input)
        field.placeholder = "the new name"
        # an invisible character a new name may not hold is left out: the person could
        # not see it to delete it, and Enter then renames the key to what it looks like
        field.value = without_hidden(key)
        field.action_end()
        self.option_list.display = False
        self.query_one("#hint", Static).update(self._hint())

    def _leave_rename(self, select: str | None = None) -> None:
        """Back to the list, its highlight on ``select`` (the key just renamed, or
        left alone): Enter then opens the key the person was working on."""
        self.renaming = None
        self.query_one("#dialog").border_title = "Conversations"
        field = self.query_one(Input)
        field.placeholder = "filter, or type a new conversation's name"
        # Emptied without its Changed message: that would clear what is said next
        # ("Renamed … to …", which the person never saw) and refilter a second time.
        with field.prevent(Input.Changed):
            field.value = ""
        self.query_one("#hint", Static).update(self._hint())
        self._select = select
        self._refilter("")

    @work(exclusive=True, group="keys.manage")
    async def _do_rename(self, old: str, new: str) -> None:
        if not new or new == old:
            self._leave_rename(select=old)
            return
        try:
            if self._validate is not None:
                self._validate(new)
            assert self._rename is not None
            self.keys = [dict(k) for k in await self._rename(old, new) if k.get("key")]
        except Exception as error:  # a one-line message meant for people
            self._say(str(error))
            return
        if self.current == old:
            self.current = new
        self._leave_rename(select=new)
        self._say(f"Renamed {name_line(old)} to {name_line(new)}.", done=True)

    @work(exclusive=True, group="keys.manage")
    async def action_delete(self) -> None:
        key = self._highlighted_key()
        if self._delete is None or key is None or self.renaming is not None:
            return
        from selfref_tui.ui.screens.confirm import ConfirmScreen

        count = next((k.get("messages", 0) for k in self.keys if k.get("key") == key), 0)
        confirmed = await self.app.push_screen_wait(
            ConfirmScreen(
                f"Delete the conversation {name_line(key, 60)} ({count} message"
                f"{'' if count == 1 else 's'})? Its files are "
                "moved to the trash folder in the data dir, not destroyed.",
                title="Delete conversation",
            )
        )
        if not confirmed:
            return
        rows = self.row_ids
        try:
            self.keys = [dict(k) for k in await self._delete(key) if k.get("key")]
        except Exception as error:  # a one-line message meant for people
            self._say(str(error))
            return
        self._refilter(self.query_one(Input).value)
        # The highlight stays where the deleted row was (on the row after it, else the one
        # before): it went back to the first row, the conversation on screen, which the
        # next shift+Delete of a tidy-up then aimed at.
        at = rows.index(KEY_PREFIX + key) if KEY_PREFIX + key in rows else 0
        now = self.row_ids
        for row in rows[at + 1:] + rows[:at][::-1]:
            if row in now:
                self.option_list.highlighted = now.index(row)
                break
        self._say(f"Deleted {name_line(key)}: its files are in the trash folder of the data dir.",
                  done=True)


def _local(stamp: str) -> str:
    """The time on the person's clock (imported here: the context package is not light)."""
    from selfref_tui.context.local_time import shown_time

    return shown_time(stamp)
