"""Slash commands typed into the chat input: their table and their parser.

Parsing is kept apart from running them so it can be tested without a
screen and so the help screen, the palette and the parser share one table.
What each command does is a second table, name → handler, in
``command_handlers.py`` (it needs the app's screens); a test keeps the two
tables' names the same. A new command is one :class:`CommandSpec` here and
one handler there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class CommandSpec:
    name: str
    usage: str
    help: str
    min_args: int = 0
    #: at most this many arguments (``/export ID [PATH]``: 2)
    max_args: int = 0
    #: True when the last argument takes the rest of the line, spaces and all
    #: (``/remember`` free text, a PATH with spaces)
    rest_is_text: bool = False
    #: the last argument is a path: one pair of quotes around it is taken off, as a shell
    #: does (``/save "my notes.md"`` wrote a folder named ``"`` and a file inside it)
    last_is_path: bool = False


COMMANDS: tuple[CommandSpec, ...] = (
    CommandSpec(
        "compact",
        "/compact [FOCUS]",
        "Summarise the conversation now and continue from the summary; FOCUS (optional) "
        "says what the summary should keep",
        max_args=1,
        rest_is_text=True,
    ),
    CommandSpec(
        "remember",
        "/remember TEXT",
        "Store an experience the agent keeps across turns",
        min_args=1,
        max_args=1,
        rest_is_text=True,
    ),
    CommandSpec(
        "forget",
        "/forget ID",
        "Forget an experience (for example exp_003)",
        min_args=1,
        max_args=1,
    ),
    CommandSpec(
        "export",
        "/export ID [PATH]",
        "Write ref ID to a file (dialog when PATH is left out)",
        min_args=1,
        max_args=2,
        rest_is_text=True,
        last_is_path=True,
    ),
    CommandSpec(
        "save",
        "/save [PATH]",
        "Export this whole conversation as Markdown (PATH ending .json: as JSON)",
        max_args=1,
        rest_is_text=True,
        last_is_path=True,
    ),
    CommandSpec(
        "find",
        "/find [TEXT]",
        "Find TEXT in this conversation (no TEXT: the find bar, as ctrl+f)",
        max_args=1,
        rest_is_text=True,
    ),
    CommandSpec(
        "attach",
        "/attach PATH",
        "Add an image (PNG, JPEG, WebP or GIF, up to 20 MB) to your next message",
        min_args=1,
        max_args=1,
        rest_is_text=True,
        last_is_path=True,
    ),
    CommandSpec(
        "key", "/key [NAME]", "Switch to conversation NAME (created when new; without NAME: "
        "pick one, as ctrl+o; /resume too)", max_args=1
    ),
    CommandSpec("new", "/new", "Start a new conversation (/clear too)"),
    CommandSpec(
        "model",
        "/model [NAME]",
        "Switch this conversation's model (without NAME: pick from the server's list)",
        max_args=1,
    ),
    CommandSpec(
        "profile",
        "/profile [NAME]",
        "Switch this conversation to a [providers.NAME] profile of config.toml (without "
        "NAME: the profiles; default: back to the provider the app started with)",
        max_args=1,
    ),
    CommandSpec(
        "instructions",
        "/instructions",
        "Edit this conversation's instructions (added to its system prompt)",
    ),
    CommandSpec(
        "pin",
        "/pin [N]",
        "Pin message N (or the highlighted one): every compaction keeps it verbatim",
        max_args=1,
    ),
    CommandSpec("unpin", "/unpin [N]", "Unpin message N (or the highlighted one)", max_args=1),
    CommandSpec("context", "/context", "Show exactly what the model will see next"),
    CommandSpec("mcp", "/mcp [restart NAME | reload]", "MCP servers: their state and tools "
                "(restart NAME stops one and starts it again, its config.toml table read anew; "
                "reload reads every table: new ones start, removed ones stop, changed ones "
                "restart)", max_args=2, rest_is_text=True),
    CommandSpec("retry", "/retry", "Send the message whose turn failed again (not typed twice)"),
    CommandSpec(
        "rewind",
        "/rewind [N|undo]",
        "Take the context back to just before message N (your recent messages when left "
        "out; undo brings the last rewind back); nothing is deleted",
        max_args=1,
    ),
    CommandSpec("edit", "/edit [N]", "Your last (or highlighted, or Nth) message back into the "
                "input to edit and resend; the rest is kept, rewound", max_args=1),
    CommandSpec("regenerate", "/regenerate", "Ask again for the last answer (the old one is "
                "kept, rewound)"),
    CommandSpec("branch", "/branch [NAME]", "A new conversation from here (before the highlighted "
                "message, or all of it); this one is unchanged", max_args=1),
    CommandSpec("help", "/help", "Keys and commands"),
    CommandSpec("quit", "/quit", "Quit selfref-tui, as ctrl+q does (/exit too)"),
)

_BY_NAME = {spec.name: spec for spec in COMMANDS}
#: other names people type for a command, from other chat apps (Claude Code, Codex, aider)
ALIASES = {"exit": "quit", "clear": "new", "resume": "key"}


@dataclass(frozen=True)
class Command:
    name: str
    args: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return " ".join(self.args)


class CommandError(ValueError):
    """A slash command that cannot run; the message tells the person what to type."""


def is_command(text: str) -> bool:
    """A line starting with one ``/`` and a letter; ``//x`` is sent as ``/x``."""
    stripped = text.lstrip()
    return stripped.startswith("/") and len(stripped) > 1 and stripped[1].isalpha()


def unescape(text: str) -> str:
    """``//etc/hosts`` sends the literal ``/etc/hosts``."""
    stripped = text.lstrip()
    return stripped[1:] if stripped.startswith("//") else text


def parse_command(text: str) -> Command:
    """Parse ``/name args…``; raises :class:`CommandError` with a usable hint."""
    stripped = text.strip()
    if not is_command(stripped):
        raise CommandError("Not a command; commands start with /, for example /help.")
    head, _, rest = stripped[1:].partition(" ")
    name = ALIASES.get(head.lower(), head.lower())
    spec = _BY_NAME.get(name)
    if spec is None:
        names = " ".join(f"/{s.name}" for s in COMMANDS)
        raise CommandError(f"Unknown command /{head}. Commands: {names}")
    rest = rest.strip()
    if spec.rest_is_text and spec.max_args:
        args = tuple(rest.split(maxsplit=spec.max_args - 1))
    else:
        args = tuple(rest.split())
    if len(args) < spec.min_args:
        raise CommandError(f"Usage: {spec.usage}")
    if len(args) > spec.max_args:
        raise CommandError(f"Too many arguments. Usage: {spec.usage}")
    if spec.last_is_path and len(args) == spec.max_args:
        last = args[-1]
        if len(last) > 1 and last[0] == last[-1] and last[0] in "'\"":
            args = (*args[:-1], last[1:-1])
    return Command(name, args)


#: the words Tab completes after a command's name, then a name from the app (``/mcp
#: restart`` and one of the MCP servers)
SUBCOMMANDS: dict[str, tuple[str, ...]] = {"mcp": ("restart", "reload")}
#: the words of :data:`SUBCOMMANDS` that a name follows
NAMED = ("restart",)


def completes(text: str) -> bool:
    """Tab on ``text`` (the cursor at its end) is ours: a command word being typed, or
    the words after a command that has them completed (``/mcp restart NA``)."""
    if not text.startswith("/") or text.startswith("//") or "\n" in text:
        return False
    head, space, _ = text[1:].partition(" ")
    return not any(c.isspace() for c in text) or (bool(space) and head.lower() in SUBCOMMANDS)


def complete(text: str, names: Sequence[str] = ()) -> tuple[str, list[str]]:
    """Tab on ``/ex``: the input's text completed, and the commands it could still be.

    A unique match is completed with a space after it when the command takes
    arguments; several are completed as far as they agree. After a command of
    :data:`SUBCOMMANDS`, its word (``restart``) and then one of ``names`` (the MCP
    servers as they are now) are completed the same way, the candidates being the
    words or names. Other text (``/export x``, plain words) comes back as it is.
    """
    if not text.startswith("/") or text.startswith("//"):
        return text, []
    if any(c.isspace() for c in text):
        return _complete_words(text, names)
    typed = text[1:].lower()
    found = [spec.name for spec in COMMANDS if spec.name.startswith(typed)]
    if not found:
        return text, []
    if len(found) == 1:
        spec = _BY_NAME[found[0]]
        return f"/{spec.name}" + (" " if spec.max_args else ""), found
    return "/" + max(_agreed(found), typed, key=len), found


def _complete_words(text: str, names: Sequence[str]) -> tuple[str, list[str]]:
    head, _, rest = text[1:].partition(" ")
    words = SUBCOMMANDS.get(head.lower())
    if words is None or "\n" in text:
        return text, []
    word, space, typed = rest.lstrip(" ").partition(" ")
    if not space:  # the word itself being typed
        found = [w for w in words if w.startswith(word.lower())]
        if len(found) == 1:
            return f"/{head} {found[0]}" + (" " if found[0] in NAMED else ""), found
        agreed = _agreed(found) if found else ""
        return (f"/{head} {agreed}" if len(agreed) > len(word) else text), found
    if word.lower() not in NAMED:
        return text, []
    typed = typed.lstrip(" ")
    found = [n for n in names if n.startswith(typed)] or \
        [n for n in names if n.lower().startswith(typed.lower())]
    if not found:
        return text, []
    done = found[0] if len(found) == 1 else _agreed(found)
    if len(done) < len(typed):
        return text, found
    return f"/{head} {word} {done}", found


def _agreed(words: Sequence[str]) -> str:
    """What ``words`` all start with."""
    common = words[0]
    for word in words[1:]:
        while not word.startswith(common):
            common = common[:-1]
    return common


def help_rows() -> list[tuple[str, str]]:
    return [(spec.usage, spec.help) for spec in COMMANDS]
