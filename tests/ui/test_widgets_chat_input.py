"""The chat input: Enter sends, shift+enter / ctrl+j add a line, Up recalls."""

from __future__ import annotations

from textual import on
from textual.app import App, ComposeResult

from selfref_tui.selfref.attach import Attachment
from selfref_tui.ui.widgets.chat_input import ChatInput


class InputApp(App[None]):
    def __init__(self, accept: bool = True) -> None:
        super().__init__()
        self.sent: list[str] = []
        self.bottom = 0
        self.accept = accept

    def compose(self) -> ComposeResult:
        yield ChatInput()

    @on(ChatInput.Submitted)
    def _sent(self, message: ChatInput.Submitted) -> None:
        self.sent.append(message.text)
        if self.accept:
            message.chat_input.accept(message.text)
        else:  # refused, as the app refuses a command: the text stays to be fixed
            message.chat_input.settled()

    @on(ChatInput.ScrollToBottom)
    def _bottom(self) -> None:
        self.bottom += 1


async def test_enter_sends_and_newline_keys_insert_lines():
    app = InputApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatInput)
        chat.focus()
        await pilot.press("h", "i", "shift+enter", "t", "h", "e", "r", "e", "ctrl+j", "x")
        assert chat.text == "hi\nthere\nx"
        await pilot.press("enter")
        await pilot.pause()
        assert app.sent == ["hi\nthere\nx"] and chat.text == ""
        await pilot.press("enter")  # empty input sends nothing
        await pilot.pause()
        assert app.sent == ["hi\nthere\nx"]


async def test_rejected_text_stays_in_the_input():
    app = InputApp(accept=False)
    async with app.run_test() as pilot:
        chat = app.query_one(ChatInput)
        chat.focus()
        await pilot.press("o", "k", "enter")
        await pilot.pause()
        assert app.sent == ["ok"] and chat.text == "ok"


async def test_up_on_empty_input_recalls_earlier_inputs():
    app = InputApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatInput)
        chat.focus()
        for word in ("one", "two"):
            await pilot.press(*word, "enter")
        await pilot.pause()
        await pilot.press("up")
        assert chat.text == "two"
        await pilot.press("up")
        assert chat.text == "one"
        await pilot.press("up")
        assert chat.text == "one"
        await pilot.press("down")
        assert chat.text == "two"
        await pilot.press("down")
        assert chat.text == ""
        # With text typed, Up is plain cursor movement.
        await pilot.press("z", "up")
        assert chat.text == "z"


async def test_end_on_empty_input_returns_transcript_to_bottom():
    app = InputApp()
    async with app.run_test() as pilot:
        app.query_one(ChatInput).focus()
        await pilot.press("end")
        await pilot.pause()
        assert app.bottom == 1
        await pilot.press("a", "end")
        await pilot.pause()
        assert app.bottom == 1


async def test_a_long_paste_is_a_chip_and_is_sent_in_full():
    from textual import events

    long_text = "\n".join(f"line {i} " + "x" * 60 for i in range(140))
    app = InputApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatInput)
        chat.focus()
        await pilot.press(*"see: ")
        app.post_message(events.Paste(long_text))
        await pilot.pause()
        assert chat.text == "see: [pasted 140 lines #1]"
        assert chat.document.line_count == 1
        await pilot.press("enter")
        await pilot.pause()
        assert app.sent == ["see: " + long_text]
        assert chat.text == "" and chat.pastes == {}
        # A short paste goes in as it is; ctrl+g expands a chip to read or edit it.
        app.post_message(events.Paste("short"))
        app.post_message(events.Paste("y" * 2500))
        await pilot.pause()
        assert chat.text == "short[pasted 2,500 characters #1]"
        await pilot.press("ctrl+g")
        assert chat.text == "short" + "y" * 2500 and chat.pastes == {}
        chat.clear()
        # tmux pastes line ends as CR: still lines, and sent as lines.
        app.post_message(events.Paste(long_text.replace("\n", "\r")))
        await pilot.pause()
        assert chat.text == "[pasted 140 lines #1]"
        await pilot.press("enter")
        await pilot.pause()
        assert app.sent[-1] == long_text
        # A long paste is inert like any other: its escape sequences are shown, not sent raw.
        app.post_message(events.Paste("\x1b]52;c;aGk=\x07" + long_text))
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert app.sent[-1].startswith("␛]52;c;aGk=␇") and "\x1b" not in app.sent[-1]


async def test_an_attached_image_is_drawn_as_a_chip_with_its_name_and_size():
    """The chip's text stays in the input (cursor keys and Backspace work on it), but it is
    drawn as a chip: padding on its own background, the name bold, the rest muted. A file
    name is untrusted: its controls are shown as symbols and markup stays characters."""
    from tests.hostile import assert_inert

    name = "[@click=app.quit]x\x1b]52;c;aGk=\x07.png"
    app = InputApp()
    async with app.run_test(size=(100, 10)) as pilot:
        chat = app.query_one(ChatInput)
        chat.focus()
        await pilot.press(*"see ")
        chat.add_image(png(name, 2048))
        await pilot.pause()
        chip = "[image _@click=app.quit_x␛_52;c;aGk=␇.png 2.0 KB #1]"
        assert chat.text == f"see {chip} "
        segments = list(chat.render_line(0))
        shown = "".join(s.text for s in segments)
        assert_inert(shown)
        start = shown.index(" image ")
        assert shown[start:start + len(chip)] == " " + chip[1:-1] + " "  # brackets: padding
        plain_bg = segments[0].style.bgcolor  # "see "
        on_chip = [s for s in segments if any(x in s.text for x in ("image", ".png", "KB"))]
        assert on_chip and all(s.style.bgcolor != plain_bg for s in on_chip)
        name_segment = next(s for s in segments if ".png" in s.text)
        assert name_segment.text == "_@click=app.quit_x␛_52;c;aGk=␇.png" and name_segment.style.bold
        detail = next(s for s in segments if "2.0 KB" in s.text)
        assert not detail.style.bold and detail.style.color != name_segment.style.color
        # Backspace right after the chip removes it, image and all.
        await pilot.press("backspace")
        assert chat.text == "see " and chat.attached == ()
        segments = list(chat.render_line(0))
        assert {s.style.bgcolor for s in segments if s.text.strip()} == {plain_bg}


class BusyApp(App[None]):
    """Keys arrive between Enter and the app taking the text (a busy loop, a fast typist)."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[str] = []

    def compose(self) -> ComposeResult:
        yield ChatInput()

    @on(ChatInput.Submitted)
    def _sent(self, message: ChatInput.Submitted) -> None:
        message.chat_input.insert("ne")  # typed after Enter, before the text was accepted
        self.sent.append(message.text)
        message.chat_input.accept(message.text)


async def test_keys_typed_after_enter_before_the_app_took_the_text_are_kept():
    app = BusyApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatInput)
        chat.focus()
        await pilot.press("g", "o", "enter")
        await pilot.pause()
        assert app.sent == ["go"]
        assert chat.text == "ne" and chat.sent_history == ["go"]
        chat.insert("xt")
        chat.accept("next")  # accepted without an Enter: the whole input was taken
        assert chat.text == ""


async def test_a_second_enter_before_the_app_took_the_first_sends_only_what_came_after():
    """A burst of keys (a fast typist, a busy app): "hi" Enter "more" Enter all reach the
    input before its first Submitted reaches the app. The second Enter held "himore" and
    sent it as the second message; now it waits for the first to be taken and sends
    "more". Enter twice on the same text sends it once."""
    from textual import events

    app = InputApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatInput)
        chat.focus()
        for key in [*"hi", "enter", *"more", "enter", "enter"]:
            chat.post_message(events.Key(key, "\r" if key == "enter" else key))
        for _ in range(100):
            if len(app.sent) >= 2 and not chat.text:
                break
            await pilot.pause(0.02)
        await pilot.pause()
        assert app.sent == ["hi", "more"] and chat.text == ""
        assert chat.sent_history == ["hi", "more"]


async def test_an_enter_kept_waiting_is_dropped_when_the_app_refuses_the_text():
    """The app did not take the text (a command it refused): it stays to be fixed, and
    the Enter pressed meanwhile sends nothing of it again."""
    from textual import events

    app = InputApp(accept=False)
    async with app.run_test() as pilot:
        chat = app.query_one(ChatInput)
        chat.focus()
        for key in [*"/x", "enter", "enter"]:
            chat.post_message(events.Key(key, "\r" if key == "enter" else key))
        for _ in range(100):
            if app.sent:
                break
            await pilot.pause(0.02)
        await pilot.pause()
        assert app.sent == ["/x"] and chat.text == "/x"
        await pilot.press("y", "enter")  # fixed and sent again: not held back
        await pilot.pause()
        assert app.sent == ["/x", "/xy"]


def png(name: str, size: int = 64) -> Attachment:
    """An attachment of ``size`` bytes that reads as a PNG (its magic bytes, then zeros)."""
    return Attachment(name, "image/png", b"\x89PNG" + b"\x00" * (size - 4))


async def typed_around_a_chip(pilot, app) -> tuple[ChatInput, str]:
    """'a ', the chip of a 64-byte cat.png, then 'b', typed into the focused input."""
    chat = app.query_one(ChatInput)
    chat.focus()
    await pilot.press(*"a ")
    chat.add_image(png("cat.png"))
    await pilot.press("b")
    return chat, "[image cat.png 64 B #1]"


async def test_the_cursor_steps_over_an_image_chip_and_typing_never_breaks_one():
    """A chip is one thing: arrows jump over it, and a key typed with the cursor inside
    (a click put it there) lands after it — a broken chip sent its text, not the image."""
    app = InputApp()
    async with app.run_test(size=(100, 10)) as pilot:
        chat, chip = await typed_around_a_chip(pilot, app)
        assert chat.text == f"a {chip} b"
        start, end = 2, 2 + len(chip)
        await pilot.press("left", "left")  # over "b" and the space, then onto the chip's end
        assert chat.cursor_location == (0, end)
        await pilot.press("left")
        assert chat.cursor_location == (0, start)
        await pilot.press("right")
        assert chat.cursor_location == (0, end)
        chat.move_cursor((0, start + 5))  # inside, as a click would
        await pilot.press("x")
        assert chat.text == f"a {chip}x b" and len(chat.attached) == 1


async def test_delete_before_a_chip_or_backspace_inside_it_takes_the_whole_chip():
    app = InputApp()
    async with app.run_test(size=(100, 10)) as pilot:
        chat, chip = await typed_around_a_chip(pilot, app)
        chat.move_cursor((0, 2))
        await pilot.press("delete")  # right before it: the chip and its space go
        assert chat.text == "a b" and chat.attached == () and chat.images == {}
        chat.add_image(png("dog.png"))
        chip = "[image dog.png 64 B #1]"
        assert chat.text == f"a {chip} b"
        chat.move_cursor((0, 6))  # inside, as a click would put it
        await pilot.press("backspace")
        assert chat.text == "a b" and chat.attached == ()
