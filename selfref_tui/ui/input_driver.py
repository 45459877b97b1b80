"""Terminal input that a paste or a stray byte cannot turn into key presses or a crash.

Textual's Linux driver reads the terminal and feeds its key parser, and these
went wrong there:

- **A paste holding ESC.** Inside a bracketed paste the parser still scans
  each ESC as the start of a key sequence and, when none matches, sends its
  characters on as keys as well: a pasted terminal log came out scrambled
  ("^[31mred…" typed at the cursor, the paste's end lost), two ESCs were an
  Esc key press (an answer stopped) and ESC followed by a control character
  ran that key's binding (ESC ctrl+o opened the conversation switcher).
  :class:`PasteGuard` takes the paste's text out of what the parser reads,
  every ESC in it shown as ``␛`` (what the input shows for it anyway).
- **A paste holding the end mark itself** (``ESC[201~``, which a terminal
  that does not filter it sends as it is): the paste ended there and the rest
  of it was typed as keys, its line ends pressing Enter. An end mark is only
  taken as the end once no more input comes for a moment
  (:meth:`PasteGuard.idle`); another end mark before that makes the earlier
  one part of the text. The terminal writes a paste in one go, so its own end
  mark follows in that burst. A start mark in the burst does not end the paste
  either: the pasted text can hold one too (``ESC[201~`` Enter ``rm …`` Enter
  ``ESC[200~``), and taken as another paste it had everything between typed as
  keys; two pastes in one burst come as one, their marks shown. Keys that come in the same
  burst as a paste's end (a script's paste and Enter) wait for the pause,
  0.1 s; a person's first key after a paste comes later than that.
- **The mouse moving right after a paste.** A terminal reports each move, many
  a second, and that input was no pause: the paste waited until the mouse
  rested. Mouse reports are not taken to continue a paste: 0.1 s with nothing
  else after its end mark is the pause (:attr:`PasteGuard.moved_only`). They
  count as input again past :data:`MOUSE_HELD_CHARS`, more than a hand moves
  in that time, so a paste padded with text that reads as mouse reports after
  an end mark of its own does not end there; and so does a read of more than
  :data:`MOUSE_READ_CHARS` of them: they were there at once, and an app kept
  off the CPU for a moment found them late, which was no pause (the paste
  ended at its fake end mark and its rest was typed as keys).
- **A large paste** went through Textual's parser a character at a time, a
  Python generator step each: 2 MB took seconds of CPU. The paste's text goes
  round it (:class:`TerminalInput`), which makes the ``Paste`` event itself.
  The parser still reads each start mark, so a key sequence it holds comes
  out first, and is taken out of its paste at once: a start mark cut by a
  pause, whose first part the parser had typed as keys by then, left it
  outside a paste, and the paste's text was dropped, then added to the next.
- **A byte that is not UTF-8** (a Latin-1 terminal, xterm's 8-bit Alt, a
  pasted binary) raised in the driver's thread and ended the app, draft and
  all, with a traceback. It is read as U+FFFD instead.
- **Input that ends** (not a terminal): Textual's loop asked it again and
  again and spun a core; the app ends instead.

:class:`GuardedDriver` is Textual's driver with those changes; the input loop is
Textual's own (textual 8), and only that loop is replaced.
"""

from __future__ import annotations

import os
import re
import selectors
import time
from codecs import getincrementaldecoder

from textual._loop import loop_last
from textual._parser import ParseError
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver
from textual.events import Paste
from textual.message import Message

ESC = "\x1b"
#: what :func:`selfref_tui.safety.inert` shows ESC as
SHOWN_ESC = "\u241b"
PASTE_START = "\x1b[200~"
PASTE_END = "\x1b[201~"
#: seconds without input (mouse reports aside) after an end mark that make it the end
PAUSE_S = 0.1
#: SGR mouse reports (``ESC[<button;x;yM``, ``m`` for a release), as many as there are,
#: then maybe the first part of one more (the rest in the next read)
_MOUSE_RUN = re.compile(r"(?:\x1b\[<\d+;\d+;\d+[Mm])*"
                        r"(\x1b(?:\[(?:<(?:\d+(?:;(?:\d+(?:;\d*)?)?)?)?)?)?)?")
#: characters held after an end mark up to which mouse reports are still taken as a hand
#: on the mouse (a move is about 12; a terminal reports a move per cell, some hundreds a
#: second at most)
MOUSE_HELD_CHARS = 8_192
#: mouse reports in one read up to which they are still taken as a hand on the mouse: more
#: were all there at once (a paste's text, read late by an app kept off the CPU), and the
#: time they waited unread is no pause (a hand makes some hundreds of characters in 0.1 s)
MOUSE_READ_CHARS = 1_024
#: what the app says when its input ends (``selfref-tui < file``, run without the CLI's check)
INPUT_ENDED = ("selfref-tui: standard input ended (it is not a terminal), so no key can be "
               "read; run the app in a terminal")


def _partial_tail(text: str, mark: str) -> int:
    """How many characters at the end of ``text`` could begin ``mark``."""
    for size in range(min(len(mark) - 1, len(text)), 0, -1):
        if mark.startswith(text[-size:]):
            return size
    return 0


class PastedText(str):
    """A piece of a paste's text: for the ``Paste`` event, never for the key parser."""

    __slots__ = ()


class PasteStarts(str):
    """Input for the key parser that ends with a paste's start mark (or its last part)."""

    __slots__ = ()


class PasteEnds(str):
    """A paste's end mark: its text is whole."""

    __slots__ = ()


class PasteGuard:
    """Splits the terminal's input into what the key parser reads and a paste's text.

    :meth:`feed` gives pieces in order: ``str`` for the parser (keys, the last
    ones of a piece before a paste a :class:`PasteStarts`), :class:`PastedText`
    with no ESC left in it (shown as ``␛``), and :class:`PasteEnds` after it.
    Input arrives in chunks that may split a mark anywhere. Outside a paste
    nothing is held back (a lone Esc key press must reach the parser now); the
    last few characters are remembered so a start mark split over two chunks is
    still seen. Inside a paste, a tail that could begin the end mark waits for
    the next chunk; after an end mark, what follows waits until another end mark
    shows that one was text, or :meth:`idle` says the input paused and it was the
    end (see the module's docstring).
    """

    def __init__(self) -> None:
        self.pasting = False
        self._seen = ""  # outside a paste: the last characters passed on
        self._held = ""  # inside a paste: a possible beginning of the end mark
        #: after an end mark: what came since, as it came (None: no end mark waits).
        #: Kept in pieces, joined once: a paste of megabytes holding an end mark near
        #: its start was joined again at each read, hours of copying for 50 MB.
        self._after: list[str] | None = None
        self._tail = ""  # the last characters of ``_after``: an end mark cut across reads
        #: the last :meth:`feed` brought only mouse reports after an end mark that waits:
        #: no input that keeps the paste open (see :data:`PAUSE_S`)
        self.moved_only = False
        self._mouse_part = ""  # the first part of a mouse report cut across reads
        self._mouse_chars = 0  # characters held since the end mark

    @property
    def holding(self) -> bool:
        """An end mark waits to be confirmed (:meth:`idle` releases it)."""
        return self._after is not None

    def feed(self, text: str) -> list[str]:
        out: list[str] = []
        self.moved_only = self._after is not None and bool(text)
        while text:
            if self._after is not None:
                text = self._confirm(text, out)
            elif self.pasting:
                text = self._held + text
                self._held = ""
                end = text.find(PASTE_END)
                if end < 0:
                    keep = _partial_tail(text, PASTE_END)
                    out.append(PastedText(text[:len(text) - keep].replace(ESC, SHOWN_ESC)))
                    self._held = text[len(text) - keep:]
                    break
                out.append(PastedText(text[:end].replace(ESC, SHOWN_ESC)))
                self._hold()
                self.moved_only = False  # the end mark itself: input
                text = text[end + len(PASTE_END):]
            else:
                joined = self._seen + text
                start = joined.find(PASTE_START)
                if start < 0:
                    out.append(text)
                    self._seen = joined[-(len(PASTE_START) - 1):]
                    break
                after = start + len(PASTE_START) - len(self._seen)  # in ``text``
                out.append(PasteStarts(text[:after]))
                text = text[after:]
                self.pasting = True
                self._seen = ""
        return [piece for piece in out if piece]

    def _confirm(self, text: str, out: list[str]) -> str:
        """``text`` after an end mark: another end mark makes the first one text, whatever
        came between (a start mark too: the pasted text may hold one). Only a pause
        (:meth:`idle`) ends the paste. What is left to feed comes back."""
        assert self._after is not None
        probe = self._tail + text
        end = probe.find(PASTE_END)
        if end < 0:
            self._after.append(text)
            self._tail = probe[-(len(PASTE_END) - 1):]
            self._moved(text)
            return ""
        # the mark was the paste's own text; the second one begins at ``cut`` in ``text``
        # (below 0: in what was held already)
        cut = end - len(self._tail)
        held = "".join(self._after)
        between = held + text[:cut] if cut >= 0 else held[:len(held) + cut]
        out.append(PastedText((PASTE_END + between).replace(ESC, SHOWN_ESC)))
        self._hold()
        self.moved_only = False
        return text[cut + len(PASTE_END):]

    def _hold(self) -> None:
        """An end mark came: what follows waits until it is known to be the end."""
        self._after, self._tail = [], ""
        self._mouse_part, self._mouse_chars = "", 0

    def _moved(self, text: str) -> None:
        """Whether ``text``, held after an end mark, was mouse reports alone (and not
        more of them than a hand makes, in all or in this one read), for
        :attr:`moved_only`."""
        self._mouse_chars += len(text)
        found = None
        if self._mouse_chars <= MOUSE_HELD_CHARS and len(text) <= MOUSE_READ_CHARS:
            # (a paste held back, or more than a hand in one read: no scan, no copy)
            found = _MOUSE_RUN.fullmatch(self._mouse_part + text)
        if found is None:
            self.moved_only = False
            self._mouse_part = ""
            return
        self._mouse_part = found.group(1) or ""

    def _end(self, out: list[str]) -> None:
        out.append(PasteEnds(PASTE_END))
        self.pasting = False
        self._seen = ""
        self._after = None
        self.moved_only = False

    def idle(self) -> list[str]:
        """The input paused: an end mark waiting is the paste's end; what came after it
        is read as typed."""
        if self._after is None:
            return []
        out: list[str] = []
        after = "".join(self._after)
        self._end(out)
        return out + self.feed(after)


class TerminalInput:
    """The driver's input path, from the terminal's bytes to Textual's events.

    Decoded leniently (a byte that is not UTF-8 is U+FFFD), split by
    :class:`PasteGuard`, and parsed by Textual's key parser, which sees each
    paste's start mark, then an end mark at once, and never its text. The
    ``Paste`` event is made here from the guard's pieces (NUL left out, as
    Textual does), not from the parser's, which the parser makes only if it
    took the start mark whole.
    """

    def __init__(self, debug: bool = False) -> None:
        self._parser = XTermParser(debug)
        self._decode = getincrementaldecoder("utf-8")(errors="replace").decode
        self._guard = PasteGuard()
        self._pasted: list[str] = []

    def feed(self, raw: bytes, final: bool = False) -> list[Message]:
        return self._parse(self._guard.feed(self._decode(raw, final=final)))

    @property
    def holding(self) -> bool:
        """A paste's end mark waits for a pause (:meth:`idle`)."""
        return self._guard.holding

    @property
    def moved_only(self) -> bool:
        """The last :meth:`feed` was mouse reports alone after an end mark that waits: no
        input that puts the pause off."""
        return self._guard.moved_only

    def idle(self) -> list[Message]:
        """No input for a moment: what waited for it, then the parser's own timeouts (a
        lone Esc)."""
        return [*self._parse(self._guard.idle()), *self._parser.tick()]

    def tick(self) -> list[Message]:
        return list(self._parser.tick())

    def close(self) -> None:
        """The end of input: the parser told, what it held dropped."""
        try:
            for _event in self._parser.feed(""):
                pass
        except (EOFError, ParseError):
            pass

    def _parse(self, pieces: list[str]) -> list[Message]:
        found: list[Message] = []
        for piece in pieces:
            if isinstance(piece, PastedText):
                self._pasted.append(piece)
            elif isinstance(piece, PasteEnds):
                found.append(Paste("".join(self._pasted).replace("\x00", "")))
                self._pasted.clear()
            else:
                found += self._keys(piece)
                if isinstance(piece, PasteStarts):
                    found += self._keys(PASTE_END)  # the parser's own paste, if any, ends
        return found

    def _keys(self, text: str) -> list[Message]:
        """The parser's events for ``text``; it reads no paste's text, so a ``Paste`` of
        its own (for a start mark and the end mark given after it) is empty."""
        return [event for event in self._parser.feed(text) if not isinstance(event, Paste)]


class GuardedDriver(LinuxDriver):
    """Textual's Linux driver reading input through :class:`TerminalInput`."""

    #: the terminal was given back on SIGTSTP (ctrl+z) and is taken again on SIGCONT
    _given_back = False

    def _sigtstp_application(self, *args: object) -> None:
        self._given_back = self._auto_restart
        super()._sigtstp_application(*args)

    def _sigcont_application(self, *args: object) -> None:
        """Take the terminal again only if it was given back. Textual did it on every
        SIGCONT: a process stopped and continued without ctrl+z (``kill -STOP`` then
        ``-CONT``, a debugger, a CPU limiter) got a second input thread and writer beside
        the first, two readers of one terminal (a paste's state lost to the new one), and
        ctrl+q no longer quit."""
        if self._given_back:
            self._given_back = False
            super()._sigcont_application(*args)

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
        terminal = TerminalInput(self._debug)
        read = os.read
        clock = time.monotonic
        stirred = clock()  # the last input that was not mouse reports after an end mark

        def process_selector_events(
            selector_events: list[tuple[selectors.SelectorKey, int]], final: bool = False
        ) -> None:
            nonlocal stirred
            for last, (_key, mask) in loop_last(selector_events):
                if mask & event_read:
                    raw = read(fileno, 1 << 16)  # a large paste in fewer rounds
                    if not raw:
                        self._input_ended(selector)
                        break
                    for event in terminal.feed(raw, final=final and last):
                        self.process_message(event)
                    if not terminal.moved_only:
                        stirred = clock()
            # a pause, the mouse's reports aside (a hand on it never rests for long)
            paused = not selector_events or (terminal.holding and clock() - stirred >= PAUSE_S)
            if paused and terminal.holding and selector.get_map() and selector.select(0):
                # input waits to be read: the time passed was this app kept off the CPU (a
                # busy machine, stopped and continued), which let the wait above time out
                # unread, not a pause in the input; taken as one it ended a paste at an end
                # mark of its own text and typed the rest as keys
                paused = False
            for event in terminal.idle() if paused else terminal.tick():
                self.process_message(event)

        try:
            while not self.exit_event.is_set():
                process_selector_events(selector.select(PAUSE_S))
            if selector.get_map():
                selector.unregister(self.fileno)
            process_selector_events(selector.select(PAUSE_S), final=True)
        finally:
            selector.close()
            terminal.close()
