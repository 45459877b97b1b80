"""What an empty conversation says: what the agent can do, and the keys to see it."""

from __future__ import annotations

from collections.abc import Callable

from textual.content import Content

from selfref_tui.safety import name_line


def empty_hint(key: str, label: Callable[[str, str], str], *, demo: bool) -> Content:
    """A new conversation says what the agent can do and where to look.

    Args:
        key: the memory key on screen (untrusted: a name from the disk).
        label: a binding id and its default key → the key the person has bound.
        demo: the offline demo model answers, so its prompts are suggested.
    """
    sidebar, forks = label("toggle_sidebar", "ctrl+b"), label("toggle_forks", "ctrl+t")
    export, helps = label("export_ref", "ctrl+s"), label("help", "f1")
    parts: list[str | tuple[str, str]] = [
        "A new conversation named ",
        (name_line(key), "bold"),
        ".\n\nThe agent remembers facts across sessions (the sidebar, ",
        (sidebar, "bold $text-accent"),
        "), wraps output worth keeping in refs you can export (",
        (export, "bold $text-accent"),
        "), compacts a long history by itself, and can fork helper agents (",
        (forks, "bold $text-accent"),
        ").\n\n",
        (helps.upper() if len(helps) <= 3 else helps, "bold $text-accent"),
        " keys and slash commands · ",
        ("/context", "bold $text-accent"),
        " what the model will see next",
    ]
    if demo:
        parts += [
            "\n\nThe offline demo model answers: ",
            ("show me some code", "italic"),
            " · ",
            ("remember that I like Python", "italic"),
            " · ",
            ("fork two helpers", "italic"),
            " · ",
            ("write something long", "italic"),
            " (then Esc)",
        ]
    return Content.assemble(*parts)
