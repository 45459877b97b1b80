"""Terminal input that a paste or a stray byte cannot turn into key presses or a crash.

Textual's Linux driver reads the terminal and feeds its key parser, and two
kinds of input went wrong there:

- **A paste holding ESC.** Inside a bracketed paste the parser still scans
  each ESC as the start of a key sequence and, when none matches, sends its
  characters on as keys as well: a pasted terminal log came out scrambled
  ("^[31mred…" typed at the cursor, the paste's end lost), two ESCs were an
  Esc key press (an answer stopped) and ESC followed by a control character
  ran that key's binding (ESC ctrl+o opened the conversation switcher).
  :class:`PasteGuard` shows every ESC between the paste's start and end marks
  as ``␛`` — what the input shows for it anyway — so the parser sees no
  sequence but the end mark.
- **A byte that is not UTF-8** (a Latin-1 terminal, xterm's 8-bit Alt, a
  pasted binary) raised in the driver's thread and ended the app, draft and
  all, with a traceback. It is read as U+FFFD instead.

:class:`GuardedDriver` is Textual's driver with those two changes; the input
loop is Textual's own (textual 8), and only that loop is replaced.
"""

from __future__ import annotations

import os
import selectors
from codecs import getincrementaldecoder

from textual._loop import loop_last
from textual._parser import ParseError
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver

ESC = "\x1b"
#: what :func:`selfref_tui.safety.inert` shows ESC as
SHOWN_ESC = "\u241b"
PASTE_START = "\x1b[200~"
PASTE_END = "\x1b[201~"
#: what the app says when its input ends (``selfref-tui < file``, run without the CLI's check)
INPUT_ENDED = ("selfref-tui: standard input ended (it is not a terminal), so no key can be "
               "read; run the app in a terminal")


def _partial_tail(text: str, mark: str) -> int:
    """How many characters at the end of ``text`` could begin ``mark``."""
    for size in range(min(len(mark) - 1, len(text)), 0, -1):
        if mark.startswith(text[-size:]):
            return size
    return 0


class PasteGuard:
    """Rewrites the terminal's input so no ESC is left inside a bracketed paste.

    Input arrives in chunks that may split a mark anywhere. Outside a paste
    nothing is held back (a lone Esc key press must reach the parser now); the
    last few characters are remembered so a start mark split over two chunks is
    still seen. Inside a paste, a tail that could begin the end mark waits for
    the next chunk.
    """

    def __init__(self) -> None:
        self.pasting = False
        self._seen = ""  # outside a paste: the last characters passed on
        self._held = ""  # inside a paste: a possible beginning of the end mark

    def feed(self, text: str) -> str:
        out: list[str] = []
        while text:
            if self.pasting:
                text = self._held + text
                self._held = ""
                end = text.find(PASTE_END)
                if end < 0:
                    keep = _partial_tail(text, PASTE_END)
                    out.append(text[:len(text) - keep].replace(ESC, SHOWN_ESC))
                    self._held = text[len(text) - keep:]
                    break
                out.append(text[:end].replace(ESC, SHOWN_ESC) + PASTE_END)
                text = text[end + len(PASTE_END):]
                self.pasting = False
                self._seen = ""
                continue
            joined = self._seen + text
            start = joined.find(PASTE_START)
            if start < 0:
                out.append(text)
                self._seen = joined[-(len(PASTE_START) - 1):]
                break
            after = start + len(PASTE_START) - len(self._seen)  # in ``text``
            out.append(text[:after])
            text = text[after:]
            self.pasting = True
            self._seen = ""
        return "".join(out)


class GuardedDriver(LinuxDriver):
    """Textual's Linux driver reading input through :class:`PasteGuard`, leniently decoded."""

    def _input_ended(self, selector: selectors.BaseSelector) -> None:
        """Standard input is at its end (a pipe or a file, not a terminal): no key will
        come. Textual's loop went on asking it, each time told "readable", and spun a
        core for as long as the app ran; it is no longer asked, and the app ends."""
        selector.unregister(self.fileno)
        self._loop.call_soon_threadsafe(self._app.call_after_refresh, self._app.exit, 2, 2,
                                        INPUT_ENDED)

    def run_input_thread(self) -> None:
        """Wait for input and dispatch events (Textual's loop, guarded)."""
        selector = selectors.SelectSelector()
        selector.register(self.fileno, selectors.EVENT_READ)
        fileno = self.fileno
        event_read = selectors.EVENT_READ
        parser = XTermParser(self._debug)
        feed = parser.feed
        tick = parser.tick
        decode = getincrementaldecoder("utf-8")(errors="replace").decode
        guard = PasteGuard().feed
        read = os.read

        def process_selector_events(
            selector_events: list[tuple[selectors.SelectorKey, int]], final: bool = False
        ) -> None:
            for last, (_key, mask) in loop_last(selector_events):
                if mask & event_read:
                    raw = read(fileno, 1024 * 4)
                    if not raw:
                        self._input_ended(selector)
                        break
                    # "" (half a character, a held mark) would tell the parser it ended
                    if unicode_data := guard(decode(raw, final=final and last)):
                        for event in feed(unicode_data):
                            self.process_message(event)
            for event in tick():
                self.process_message(event)

        try:
            while not self.exit_event.is_set():
                process_selector_events(selector.select(0.1))
            if selector.get_map():
                selector.unregister(self.fileno)
            process_selector_events(selector.select(0.1), final=True)
        finally:
            selector.close()
            try:
                for _event in feed(""):
                    pass
            except (EOFError, ParseError):
                pass
