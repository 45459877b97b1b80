"""The multi-line input: Enter sends, shift+enter / ctrl+j add a line.

It stays editable while a turn runs. Text is only cleared once the app has
accepted it (:meth:`ChatInput.accept`), so a send that fails keeps what the
person typed. Up on an empty input walks back through earlier inputs.

A long paste (more than :data:`PASTE_LINES` lines or :data:`PASTE_CHARS`
characters) is shown as a one-line chip, ``[pasted 140 lines #1]``, so the
input stays readable; ctrl+g expands the chips in place, and what is sent is
always the full text.

An image added with ``/attach`` is a chip too, ``[image cat.png 120.5 KB #1]``:
it goes with the next message while its chip is in the input; deleting the
chip (backspace right after it takes the whole chip) removes the image. It is
drawn as a chip (:meth:`ChatInput.get_line`): brackets as padding on the chip's
own background, the file name bold, the rest muted; the text underneath, what
cursor keys and selection move over, stays the plain chip.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import TextArea

from selfref_tui.safety import inert, inert_line

if TYPE_CHECKING:
    from collections.abc import Sequence

    from selfref_tui.selfref.attach import Attachment

NEWLINE_KEYS = ("shift+enter", "ctrl+j")

#: a paste longer than this (lines or characters) is shown as a chip
PASTE_LINES = 20
PASTE_CHARS = 2000
_CHIP = re.compile(r"\[pasted (?:\d+ lines|[\d,]+ characters) #(\d+)\]")


_IMAGE_CHIP = re.compile(r"\[image [^\]\n]* #(\d+)\]")


_CHIP_PREFIX = "[image "


def chip_name(name: str) -> str:
    """A file name as its chip shows it: inert (a name may hold control characters),
    with brackets and ``#`` made ``_`` so the chip stays one recognisable token."""
    return re.sub(r"[\[\]#\n]", "_", inert_line(name, 80)) or "image"


def image_chip(name: str, size: int, number: int) -> str:
    """``[image cat.png 120.5 KB #1]``; brackets and ``#`` in the name are left out."""
    from selfref_tui.ui.transcript.image import human_size

    return f"{_CHIP_PREFIX}{chip_name(name)} {human_size(size)} #{number}]"


def line_count(text: str) -> int:
    """Lines as a person counts them: a final line end starts no new line."""
    return len(text.splitlines()) or 1


def chip_label(text: str, number: int) -> str:
    lines = line_count(text)
    size = f"{lines} lines" if lines > 1 else f"{len(text):,} characters"
    return f"[pasted {size} #{number}]"


class ChatInput(TextArea):
    COMPONENT_CLASSES: ClassVar[set[str]] = TextArea.COMPONENT_CLASSES | {
        "chat-input--chip",
        "chat-input--chip-detail",
    }

    DEFAULT_CSS = """
    ChatInput {
        height: auto;
        min-height: 3;
        max-height: 12;
        border: round $primary 50%;
        padding: 0 1;
        background: $surface;
    }
    ChatInput:focus { border: round $primary; }
    ChatInput.-busy { border: round $warning 70%; }
    ChatInput > .chat-input--chip { background: $accent 35%; color: $text; text-style: bold; }
    ChatInput > .chat-input--chip-detail { color: $text-muted; text-style: not bold; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "ctrl+g",
            "expand_pastes",
            "Expand paste",
            id="input.expand_pastes",
            show=False,
            tooltip="Show the full text of the pasted chips in the input",
        ),
    ]

    @dataclass
    class Submitted(Message):
        """The person pressed Enter; the app calls :meth:`ChatInput.accept` if it took the text."""

        chat_input: ChatInput
        text: str
        #: images attached with ``/attach`` whose chips are in the input
        images: tuple[Attachment, ...] = ()

        @property
        def control(self) -> ChatInput:
            return self.chat_input

    @dataclass
    class CompleteCommand(Message):
        """Tab on a slash command being typed (``/ex``): the app completes it."""

        text: str

    @dataclass
    class ScrollToBottom(Message):
        """End on an empty input means "back to the bottom of the transcript"."""

    @dataclass
    class ScrollPage(Message):
        """Page Up / Page Down while the input has nothing to page through: page the transcript."""

        direction: int

    def __init__(self, *, id: str | None = None, placeholder: str | Sequence[str] = "") -> None:
        """``placeholder``: one text, or several from longest to shortest, of which the
        input shows the longest that fits its width (a narrow input showed the long
        one cut mid-word: "newline · /")."""
        #: the placeholder's wordings, longest first
        self.placeholders = (placeholder,) if isinstance(placeholder, str) else tuple(placeholder)
        super().__init__(
            id=id,
            soft_wrap=True,
            show_line_numbers=False,
            tab_behavior="focus",
            placeholder=self.placeholders[0] if self.placeholders else "",
            # The cursor line's style is laid over each line after get_line, so it
            # would paint over the image chips; the cursor itself shows the line.
            highlight_cursor_line=False,
        )
        self.sent_history: list[str] = []
        self._recall_index: int | None = None
        #: chip number -> the pasted text it stands for
        self.pastes: dict[int, str] = {}
        #: chip number -> an attached image
        self.images: dict[int, Attachment] = {}
        #: the input's text when Enter was pressed, until the app accepts it
        self._at_enter: str | None = None
        #: Enter pressed again before the app took the text of the one before
        self._enter_waiting = False

    def on_resize(self, event: events.Resize) -> None:
        room = self.content_size.width - 1  # the cursor's cell stays free
        fits = [text for text in self.placeholders if len(text) <= room]
        if self.placeholders:
            self.placeholder = fits[0] if fits else self.placeholders[-1]

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            if self._at_enter is not None and self.text.startswith(self._at_enter):
                # The app has not taken the text sent by the last Enter yet (a busy app,
                # a fast typist): sent now, this one would hold that text again, and
                # "hi" Enter "more" Enter went out as "hi" and "himore". It is sent once
                # the app took the last: what was typed since, alone (see accept).
                self._enter_waiting = True
                return
            self._submit()
            return
        if event.key == "tab" and self._typing_a_command():
            event.stop()
            event.prevent_default()
            self.post_message(self.CompleteCommand(self.text))
            return
        if event.key in ("backspace", "delete") and self._delete_image_chip(
                forward=event.key == "delete"):
            event.stop()
            event.prevent_default()
            return
        if event.is_printable or event.key in NEWLINE_KEYS:
            self._step_out_of_chip()
        if event.key in NEWLINE_KEYS:
            event.stop()
            event.prevent_default()
            start, end = self.selection
            self._replace_via_keyboard("\n", start, end)
            return
        await super()._on_key(event)

    def _submit(self) -> None:
        """What the input holds goes to the app (Enter)."""
        text = self.full_text.strip()
        images = self.attached
        if text or images:
            self._at_enter = self.text
            self.post_message(self.Submitted(self, text, images))

    def settled(self) -> None:
        """The app is done with the last Enter's text without taking it (a command it
        refused, a message it could not send): the text stays to be fixed, and an Enter
        pressed meanwhile is dropped (it would send the same again)."""
        self._at_enter = None
        self._enter_waiting = False

    def _typing_a_command(self) -> bool:
        """A command word (or the words after ``/mcp``) with the cursor at its end: Tab
        completes, not moves the focus."""
        from selfref_tui.ui.commands import completes

        text = self.text
        return completes(text) and self.cursor_location == (0, len(text))

    def complete_to(self, text: str) -> None:
        """Replace the command word with ``text``, the cursor after it."""
        self.text = text
        self.move_cursor((0, len(text)))

    def accept(self, text: str, *, keep_images: bool = False) -> None:
        """The app took ``text``: remember it for Up and empty the input.

        ``keep_images`` (a command was run, not a message sent): attached images
        stay, their chips put back, for the message still to come. What was typed
        after Enter, before the app took the text (a fast typist, a busy app),
        stays too: it is the start of the next message, not part of this one.
        """
        typed_since = self._typed_since_enter()
        if not self.sent_history or self.sent_history[-1] != text:
            self.sent_history.append(text)
        self._recall_index = None
        kept = [number for number, _ in self._image_chips()] if keep_images else []
        self.images = {n: self.images[n] for n in kept}
        self.pastes.clear()
        self.clear()
        for number in kept:
            self._insert(self._chip_of(number) + " ")
        if typed_since:
            self._insert(typed_since)
        if self._enter_waiting:  # Enter was pressed after typing it: it goes now
            self._enter_waiting = False
            if typed_since:
                self._submit()

    def _typed_since_enter(self) -> str:
        """The text typed at the end of the input since Enter sent what was before it.

        An image chip added meanwhile (``/attach`` adds one before its command is
        accepted) is not typing: ``keep_images`` decides about it.
        """
        at_enter, self._at_enter = self._at_enter, None
        text = self.text
        if at_enter is None or not text.startswith(at_enter):
            return ""
        typed = _IMAGE_CHIP.sub("", text[len(at_enter) :])
        return typed if typed.strip() else ""

    # -- attached images as chips --------------------------------------------------------

    def add_image(self, image: Attachment) -> None:
        """Show ``image`` as a chip at the cursor; it goes with the next message."""
        number = max(self.images, default=0) + 1
        self.images[number] = image
        before = self.document.get_line(self.cursor_location[0])[: self.cursor_location[1]]
        self._insert((" " if before and not before.endswith(" ") else "")
                     + self._chip_of(number) + " ")
        self.focus()

    @property
    def attached(self) -> tuple[Attachment, ...]:
        """The images whose chips are in the input, in the order they appear."""
        return tuple(self.images[number] for number, _ in self._image_chips())

    def _chip_of(self, number: int) -> str:
        image = self.images[number]
        return image_chip(image.name, len(image.data), number)

    def _image_chips(self) -> list[tuple[int, str]]:
        """(number, chip text) of each image chip still in the input, untouched."""
        return [(number, self._chip_of(number)) for _, _, number in self._chips_in(self.text)]

    def get_line(self, line_index: int) -> Text:
        """The line as drawn: each image chip as a chip, its text underneath unchanged.

        The characters keep their places (cursor, selection and Backspace work on
        the plain chip); only ``[`` and ``]`` are drawn as the chip's padding. The
        name comes from :func:`chip_name` (inert), and this is a ``Text`` built from
        the document, never markup.
        """
        line = super().get_line(line_index)
        if not self.images or _CHIP_PREFIX not in line.plain:
            return line
        chip = self.get_component_rich_style("chat-input--chip")
        muted = self.get_component_rich_style("chat-input--chip-detail")
        detail = chip + Style(color=muted.color, bold=False)
        plain = line.plain
        spans = [(start, start + len(_CHIP_PREFIX) + len(chip_name(self.images[number].name)),
                  end) for start, end, number in self._chips_in(plain)]
        if not spans:
            return line
        chars = list(plain)
        for start, _, end in spans:
            chars[start] = chars[end - 1] = " "
        line.plain = "".join(chars)
        for start, name_end, end in spans:
            line.stylize(detail, start, end)
            line.stylize(chip, start + len(_CHIP_PREFIX), name_end)
        return line

    def _chips_in(self, line: str) -> list[tuple[int, int, int]]:
        """(start, end, number) of each image chip in ``line`` that is still whole."""
        found = []
        for match in _IMAGE_CHIP.finditer(line):
            number = int(match.group(1))
            if number in self.images and match.group(0) == self._chip_of(number):
                found.append((*match.span(), number))
        return found  # an edited chip is plain text, sent as typed

    def _chip_around(self, location: tuple[int, int]) -> tuple[int, int] | None:
        """The (start, end) columns of the whole chip ``location`` is strictly inside."""
        if not self.images:
            return None
        row, column = location
        for start, end, _ in self._chips_in(self.document.get_line(row)):
            if start < column < end:
                return start, end
        return None

    def get_cursor_left_location(self) -> tuple[int, int]:
        """Left onto a chip goes to its start: the chip is one thing, not its letters."""
        row, column = super().get_cursor_left_location()
        span = self._chip_around((row, column))
        return (row, span[0]) if span else (row, column)

    def get_cursor_right_location(self) -> tuple[int, int]:
        row, column = super().get_cursor_right_location()
        span = self._chip_around((row, column))
        return (row, span[1]) if span else (row, column)

    def _step_out_of_chip(self) -> None:
        """Typing with the cursor inside a chip (a click put it there) goes after it:
        a chip edited into other text would send that text instead of the image."""
        if self.selection.is_empty and (span := self._chip_around(self.cursor_location)):
            self.move_cursor((self.cursor_location[0], span[1]))

    def _insert(self, text: str) -> None:
        if result := self._replace_via_keyboard(text, *self.selection):
            self.move_cursor(result.end_location)

    def _delete_image_chip(self, *, forward: bool = False) -> bool:
        """Backspace right after an image chip (or its trailing space), Delete right
        before it, or either with the cursor inside it, takes the whole chip."""
        start, end = self.selection
        if start != end:
            return False
        row, col = end
        line = self.document.get_line(row)
        for first, last, number in self._chips_in(line):
            spaced = last + 1 if line[last:last + 1] == " " else last
            if not forward and col in (last, spaced):
                cut = (first, col)
            elif first < col < last or (forward and col == first):
                cut = (first, spaced)
            else:
                continue
            self._replace_via_keyboard("", (row, cut[0]), (row, cut[1]))
            del self.images[number]
            return True
        return False

    # -- long pastes as chips ------------------------------------------------------------

    @property
    def full_text(self) -> str:
        """The input's text with every paste chip replaced by what was pasted (image
        chips left out: their images go as images)."""
        text = self.text
        for _number, chip in self._image_chips():
            text = text.replace(chip, "")
        return _CHIP.sub(lambda m: self.pastes.get(int(m.group(1)), m.group(0)), text)

    async def _on_paste(self, event: events.Paste) -> None:
        """A long paste becomes a chip; any paste (a terminal log, a model's output) is
        shown and sent with its control characters visible: a TextArea would write
        them to the terminal raw."""
        if self.read_only:
            return
        # Terminals (tmux among them) paste line ends as CR: they are lines, not controls.
        text = inert(event.text.replace("\r\n", "\n").replace("\r", "\n"))
        long = line_count(text) > PASTE_LINES or len(text) > PASTE_CHARS
        if not long and text == event.text:
            return  # TextArea's own handler (next in the MRO) inserts it as it is
        event.stop()
        event.prevent_default()  # TextArea's own handler is skipped
        if not long:
            await super()._on_paste(events.Paste(text))
            return
        number = max(self.pastes, default=0) + 1
        self.pastes[number] = text
        if result := self._replace_via_keyboard(chip_label(text, number), *self.selection):
            self.move_cursor(result.end_location)
        self.focus()

    def action_expand_pastes(self) -> None:
        """Put the pasted text itself in the input, to read or edit it there."""
        if not self.pastes:
            return
        self.text = self.full_text
        self.pastes.clear()
        self.move_cursor(self.document.end)

    def recall_from(self, earlier: list[str], limit: int = 200) -> None:
        """Start Up's history from what was sent before (a restart), if nothing is sent yet.

        The store is input too: a recalled message shows its control characters
        (and is sent as shown) rather than driving the terminal from the input.
        """
        if not self.sent_history:
            self.sent_history = [inert(t) for t in earlier if t.strip()][-limit:]

    # Up/Down recall earlier inputs while the input is empty or showing one.
    def _recalling(self) -> bool:
        if not self.text:
            return True
        return (
            self._recall_index is not None
            and 0 <= self._recall_index < len(self.sent_history)
            and self.text == self.sent_history[self._recall_index]
        )

    def action_cursor_up(self, select: bool = False) -> None:
        if not select and self.sent_history and self._recalling() and self.cursor_location[0] == 0:
            index = (
                len(self.sent_history)
                if self._recall_index is None or not self.text
                else self._recall_index
            )
            if index > 0:
                self._recall_index = index - 1
                self._show(self.sent_history[self._recall_index])
            return
        super().action_cursor_up(select)

    def action_cursor_down(self, select: bool = False) -> None:
        last_row = self.document.line_count - 1
        if (
            not select
            and self._recall_index is not None
            and self._recalling()
            and (self.cursor_location[0] == last_row)
        ):
            self._recall_index += 1
            if self._recall_index >= len(self.sent_history):
                self._recall_index = None
                self.clear()
            else:
                self._show(self.sent_history[self._recall_index])
            return
        super().action_cursor_down(select)

    def action_cursor_line_end(self, select: bool = False) -> None:
        if not select and not self.text:
            self.post_message(self.ScrollToBottom())
            return
        super().action_cursor_line_end(select)

    def _fits(self) -> bool:
        """Every line of the input is in view, so paging it would do nothing."""
        return self.wrapped_document.height <= self.scrollable_content_region.height

    def action_cursor_page_up(self) -> None:
        if self._fits():
            self.post_message(self.ScrollPage(-1))
            return
        super().action_cursor_page_up()

    def action_cursor_page_down(self) -> None:
        if self._fits():
            self.post_message(self.ScrollPage(+1))
            return
        super().action_cursor_page_down()

    def _show(self, text: str) -> None:
        self.text = text
        self.move_cursor(self.document.end)
