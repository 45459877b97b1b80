"""Every app key in one table, each with an id so `[keymap]` in config.toml can move it.

The input is a TextArea, and people edit with its emacs-style keys, so no app
binding may take one of them (:data:`RESERVED_KEYS`); a remap onto one is
refused with a warning instead of silently breaking editing.

Copying the highlighted ref uses ``ctrl+r`` ("copy Ref"): ctrl+shift+c never
reaches most terminals and ctrl+c/ctrl+y belong to the input.

Descriptions are one word where they can be ("Export", "Copy", "Step"): the
footer shows them, and at 80 columns every word counts (widgets/app_footer.py);
the tooltips (on hover, and under each entry of the palette) say the rest.
"""

from __future__ import annotations

from collections.abc import Mapping

from textual.binding import Binding

#: ctrl+up / ctrl+down share one footer entry ("^↑^↓ Step"): they step through every
#: message, tool call, ref and code block, not refs only
_REF_KEYS = Binding.Group("Step", compact=True)

#: Keys the chat input (TextArea) uses for editing.
RESERVED_KEYS: frozenset[str] = frozenset(f"ctrl+{c}" for c in "aekuwdxcvzyg") | {
    "enter",
    "shift+enter",
    "ctrl+j",
    "up",
    "down",
    "left",
    "right",
    "home",
    "end",
    "backspace",
    "delete",
    "tab",
    "shift+tab",
    "pageup",
    "pagedown",
}

#: Reserved but intentionally shared: End/Escape are handled with the input in mind.
_ALLOWED_SHARED = {"end", "escape"}

BINDINGS: list[Binding] = [
    Binding(
        "escape",
        "abort",
        "Stop",
        id="abort",
        tooltip="Stop the running answer; the partial text is kept, marked interrupted "
        "(nothing running: close the fork panel; twice: rewind)",
    ),
    Binding(
        "ctrl+up",
        "ref_prev",
        "Step back",
        id="ref_prev",
        group=_REF_KEYS,
        tooltip="Highlight the previous message, ref or code block in the transcript",
    ),
    Binding(
        "ctrl+down",
        "ref_next",
        "Step on",
        id="ref_next",
        group=_REF_KEYS,
        tooltip="Highlight the next message, ref or code block in the transcript",
    ),
    Binding(
        "ctrl+s",
        "export_ref",
        "Export",
        id="export_ref",
        show=False,  # room for "Conversations" at 80 columns; F1 and the palette list it
        tooltip="Write what is highlighted to a file: a ref (fence stripped), a code block, "
        "a message or an image",
    ),
    Binding(
        "ctrl+r",
        "copy_ref",
        "Copy",
        id="copy_ref",
        show=False,  # as Export
        tooltip="Copy the highlighted message, ref or code block to the clipboard",
    ),
    Binding(
        "ctrl+b",
        "toggle_sidebar",
        "Sidebar",
        id="toggle_sidebar",
        tooltip="Show or hide experiences, refs and the context meter",
    ),
    Binding(
        "ctrl+f",
        "find",
        "Find",
        id="find",
        tooltip="Find text in this conversation (collapsed and older parts too)",
    ),
    Binding(
        "ctrl+t",
        "toggle_forks",
        "Forks",
        id="toggle_forks",
        show=False,  # room for Find at 80 columns; the panel opens when forks start
        tooltip="Show or hide the fork panel",
    ),
    Binding(
        "ctrl+n",
        "new_key",
        "New conversation",
        id="new_key",
        show=False,  # the footer is full at 80 columns; F1 and the palette list it
        tooltip="Start a new conversation (its own memory)",
    ),
    Binding(
        "ctrl+o",
        "switch_key",
        "Conversations",
        id="switch_key",
        tooltip="Open another conversation, or rename or delete one (filtered list)",
    ),
    Binding("f1", "help", "Help", id="help", tooltip="Keys and slash commands"),
    Binding(
        "f5",
        "retry_or_regenerate",
        "Retry",
        id="retry",
        show=False,
        tooltip="Send the message whose turn failed again, without typing it twice; after a "
        "turn that went well, ask again for the last answer (the old one is kept, rewound)",
    ),
    Binding(
        "f8",
        "message_actions",
        "Actions",
        id="message_actions",
        show=False,
        tooltip="What to do with the highlighted message (or the last): rewind to here, edit "
        "and resend, branch from here, pin or unpin, regenerate, undo a rewind",
    ),
    Binding(
        "f9",
        "edit_last",
        "Edit",
        id="edit_last",
        show=False,
        tooltip="Your last (or highlighted) message back into the input to edit and resend; "
        "what came after it is kept, rewound (Esc Esc when idle: pick the message)",
    ),
    Binding(
        "ctrl+end",
        "scroll_bottom",
        "Bottom",
        id="scroll_bottom",
        show=False,
        tooltip="Jump to the end of the transcript and follow it again",
    ),
    Binding(
        "ctrl+p",
        "command_palette",
        "Palette",
        id="command_palette",
        show=False,  # Textual's footer shows the palette key on its right already
        # spelled out: the footer's right-hand entry read "^pPalette" in compact form
        key_display="ctrl+p",
        tooltip="Every action, searchable",
    ),
    Binding("ctrl+q", "quit", "Quit", id="quit", priority=True, tooltip="Quit selfref-tui"),
]

BINDING_IDS: frozenset[str] = frozenset(b.id for b in BINDINGS if b.id)


_MODIFIERS = frozenset({"ctrl", "shift", "alt", "meta", "super", "hyper"})


def is_key(key: str) -> bool:
    """``key`` names a key Textual can report: modifiers, then one character or a key's
    name (``f6``, ``pageup``, ``slash``, ``question_mark``). A name it never reports
    ("ctlr+r", "nonsense") took the binding off its key and put it on none, unsaid."""
    from textual.keys import REPLACED_KEYS, Keys, key_to_character

    *modifiers, base = key.split("+")
    if not base or not _MODIFIERS.issuperset(modifiers):
        return False
    return (len(base) == 1 or base in {k.value.split("+")[-1] for k in Keys}
            or base in REPLACED_KEYS or key_to_character(base) is not None)


def check_keymap(keymap: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """The usable part of a `[keymap]` table, and one warning per refused entry."""
    usable: dict[str, str] = {}
    warnings: list[str] = []
    for binding_id, keys in keymap.items():
        if binding_id not in BINDING_IDS:
            known = ", ".join(sorted(BINDING_IDS))
            warnings.append(f"[keymap] {binding_id!r} is not a binding id; known ids: {known}")
            continue
        wanted = [k.strip() for k in str(keys).split(",") if k.strip()]
        taken = [k for k in wanted if k in RESERVED_KEYS and k not in _ALLOWED_SHARED]
        unknown = [k for k in wanted if not is_key(k)]
        if unknown:
            warnings.append(f"[keymap] {binding_id} = {keys!r} ignored: {unknown[0]!r} is not "
                            "a key; write one like f6, ctrl+r or alt+x")
            continue
        if taken or not wanted:
            why = f"{', '.join(taken)} edits text in the input" if taken else "no key given"
            warnings.append(f"[keymap] {binding_id} = {keys!r} ignored: {why}")
            continue
        usable[binding_id] = ",".join(wanted)
    return usable, warnings


def key_for(binding_id: str, keymap: Mapping[str, str] | None = None) -> str:
    """The key currently bound to ``binding_id`` (for help text and hints)."""
    if keymap and binding_id in keymap:
        return keymap[binding_id]
    for binding in BINDINGS:
        if binding.id == binding_id:
            return binding.key
    return ""
