"""A corpus of hostile inputs every widget and command-line test can reuse.

Each string is something a model, a server, a tool or a damaged file might
hand us. Shown anywhere, none may reach the terminal as a control sequence or
be parsed as markup. ``assert_inert`` checks a rendered string for both.
"""

from __future__ import annotations

ESC = "\x1b"

#: (name, text) pairs
CORPUS: list[tuple[str, str]] = [
    ("osc52_clipboard", "copy \x1b]52;c;cm0gLXJmIH4=\x07 done"),
    ("osc0_title", "\x1b]0;pwned title\x07hello"),
    ("clear_screen", "before\x1b[2J\x1b[Hafter"),
    ("csi_c1", "c1 csi \x9b31m red"),
    ("osc8_link", "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\"),
    ("bell_backspace", "ding\x07 back\x08\x08 del\x7f"),
    ("carriage_return", "safe text\rEVIL"),
    ("nul", "a\x00b"),
    ("click_markup", "[@click=app.quit]ERR[/]"),
    ("screenshot_markup", "[@click=app.screenshot('x.svg','/tmp')]SHOT[/]"),
    ("rich_markup", "[bold red]not bold[/bold red] [link=https://evil.example]x[/link]"),
    ("bidi_override", "user\u202egnp.exe"),
]

MARKUP_NAMES = ("click_markup", "screenshot_markup", "rich_markup")

#: characters that must never reach a terminal from untrusted text
FORBIDDEN = {chr(c) for c in range(0x20) if c not in (0x09, 0x0A)} | {"\x7f"} | {
    chr(c) for c in range(0x80, 0xA0)
}


def hostile(name: str) -> str:
    return dict(CORPUS)[name]


def assert_inert(shown: str) -> None:
    """``shown`` (what reached the screen or stdout) holds no control character."""
    bad = sorted({c for c in shown if c in FORBIDDEN})
    assert not bad, f"control characters reached the output: {[hex(ord(c)) for c in bad]}"
