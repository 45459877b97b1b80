"""What each slash command does: a table, command name → handler.

``commands.py`` holds what a command looks like (usage, help, arguments);
this module holds what it does. :func:`run` looks the name up here, applies
the guard a command declares (the agent must be ready) and calls the handler,
so ``SelfRefApp.run_command`` stays one lookup. What a read-only window or an
unavailable key refuses is the controller's to say: it raises
:class:`~selfref_tui.agent.chat.controller.Refused`, which the app shows.

A handler gets the app (as a :class:`CommandHost`: what the handlers use of it, so
this module does not import the app that imports it) and the parsed
:class:`~selfref_tui.ui.commands.Command`, and returns False when the typed text
should stay in the input (it needs fixing), True when the command was taken.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from selfref_tui.safety import inert_line
from selfref_tui.ui.commands import Command

if TYPE_CHECKING:
    from selfref_tui.agent.chat.controller import ChatController
    from selfref_tui.ui.widgets.chat_input import ChatInput
    from selfref_tui.ui.widgets.transcript import Transcript


class CommandHost(Protocol):
    """What the handlers use of the app (``SelfRefApp`` provides it)."""

    controller: ChatController

    @property
    def transcript(self) -> Transcript: ...
    @property
    def chat_input(self) -> ChatInput: ...
    def notify(self, message: str, **kwargs: Any) -> Any: ...
    def push_screen(self, screen: Any) -> Any: ...
    def action_help(self) -> None: ...
    async def action_quit(self) -> None: ...
    def call_later(self, callback: Any, *args: Any, **kwargs: Any) -> bool: ...
    def action_new_key(self) -> None: ...
    async def action_switch_key(self) -> None: ...
    def action_retry(self) -> None: ...
    def action_show_context(self) -> None: ...
    async def switch_key(self, key: str) -> bool: ...
    def forget(self, exp_id: str) -> None: ...
    def export_ref_by_id(self, ref_id: str, path: str | None) -> None: ...
    def pick_model(self) -> Any: ...
    async def switch_model(self, name: str) -> bool: ...
    async def switch_profile(self, name: str) -> bool: ...
    def list_profiles(self) -> None: ...
    def edit_instructions(self) -> Any: ...
    async def find_text(self, text: str) -> None: ...
    async def action_find(self) -> None: ...
    def save_conversation(self, path: str | None = None) -> Any: ...
    def _refresh_sidebar(self, memory: Any | None = None) -> None: ...
    def pin_message(self, n: int | None, pinned: bool = True) -> bool: ...
    def pick_rewind(self) -> Any: ...
    def action_edit_last(self) -> Any: ...
    def run_worker(self, work: Any, **kwargs: Any) -> Any: ...
    async def rewind_to(self, n: int) -> bool: ...
    async def undo_rewind(self) -> bool: ...
    async def edit_message(self, n: int | None = None) -> bool: ...
    async def regenerate(self) -> bool: ...
    async def branch_from(self, n: int | None, name: str | None = None) -> bool: ...
    def branch_point(self, item: Any) -> int | None: ...


Run = Callable[[CommandHost, Command], Awaitable[bool]]


@dataclass(frozen=True)
class CommandHandler:
    run: Run
    #: False for commands that work before the agent is ready (help, new, key)
    needs_agent: bool = True


HANDLERS: dict[str, CommandHandler] = {}


def handler(name: str, *, needs_agent: bool = True) -> Callable[[Run], Run]:
    """Register ``fn`` as the handler of ``/name``."""

    def register(fn: Run) -> Run:
        HANDLERS[name] = CommandHandler(fn, needs_agent=needs_agent)
        return fn

    return register


async def run(app: CommandHost, command: Command) -> bool:
    """Run ``command`` through its handler; False keeps the text in the input.

    Raises :class:`~selfref_tui.agent.chat.controller.Refused` when the controller
    will not do it now.
    """
    entry = HANDLERS[command.name]
    if entry.needs_agent:
        app.controller.check_ready()
    return await entry.run(app, command)


# ------------------------------------------------------------------ handlers


@handler("help", needs_agent=False)
async def _help(app: CommandHost, command: Command) -> bool:
    app.action_help()
    return True


@handler("quit", needs_agent=False)
async def _quit(app: CommandHost, command: Command) -> bool:
    # once the input has let go of "/quit": quitting asks first about an unsent draft
    app.call_later(app.action_quit)
    return True


@handler("new", needs_agent=False)
async def _new(app: CommandHost, command: Command) -> bool:
    app.action_new_key()
    return True


@handler("key", needs_agent=False)
async def _key(app: CommandHost, command: Command) -> bool:
    if not command.args:  # as /model and /profile alone: a choice, not a usage line
        app.call_later(app.action_switch_key)
        return True
    return await app.switch_key(command.args[0])


@handler("model")
async def _model(app: CommandHost, command: Command) -> bool:
    if not command.args:
        app.pick_model()
        return True
    return await app.switch_model(command.args[0])


@handler("profile")
async def _profile(app: CommandHost, command: Command) -> bool:
    if not command.args:
        app.list_profiles()
        return True
    return await app.switch_profile(command.args[0])


@handler("instructions")
async def _instructions(app: CommandHost, command: Command) -> bool:
    app.edit_instructions()
    return True


@handler("save")
async def _save(app: CommandHost, command: Command) -> bool:
    app.save_conversation(command.text or None)
    return True


@handler("find", needs_agent=False)
async def _find(app: CommandHost, command: Command) -> bool:
    if command.text:
        await app.find_text(command.text)
    else:
        await app.action_find()  # the bar, as ctrl+f opens it
    return True


@handler("context")
async def _context(app: CommandHost, command: Command) -> bool:
    app.action_show_context()
    return True


@handler("mcp")
async def _mcp(app: CommandHost, command: Command) -> bool:
    from selfref_tui.ui.screens.mcp_servers import McpServersScreen

    mcp = app.controller.mcp
    if command.args:
        return _mcp_restart(app, command)
    app.push_screen(McpServersScreen(mcp.overview(), mcp.overview, mcp.changes, mcp.restart)
                    if mcp else McpServersScreen([]))
    return True


def _mcp_restart(app: CommandHost, command: Command) -> bool:
    """``/mcp restart NAME`` and ``/mcp reload``: config.toml read again; the manager says
    when each server is ready (or failed, or stopped)."""
    word = command.args[0].lower()
    if not ((word == "restart" and len(command.args) == 2)
            or (word == "reload" and len(command.args) == 1)):
        app.notify("Usage: /mcp [restart NAME | reload] — /mcp lists the servers",
                   severity="warning")
        return False
    mcp = app.controller.mcp_from_file()  # made if the app started with no server
    if mcp is None:
        app.notify("No MCP servers are running: add an [mcp.servers.NAME] table to "
                   "config.toml.", severity="warning")
        return False
    if word == "reload":
        said, done = mcp.reload()
        app.notify(inert_line(said, 600), severity="information" if done else "warning",
                   timeout=8, markup=False)
        return done
    name = command.args[1]
    refused = mcp.restart(name)
    if refused:
        app.notify(inert_line(refused, 600), severity="warning", timeout=8, markup=False)
    return not refused or name in mcp.configs  # a name that is not one stays, to fix


@handler("retry")
async def _retry(app: CommandHost, command: Command) -> bool:
    app.action_retry()
    return True


def is_number(text: str) -> bool:
    """Whether ``text`` is a message number from 1 (ASCII digits: "²" is a digit to
    ``str.isdigit`` that ``int`` does not read)."""
    return text.isascii() and text.isdigit() and int(text) >= 1


def _number(app: CommandHost, text: str, usage: str) -> int | None:
    if not is_number(text):
        app.notify(f"Usage: {usage} — N is a message number (the actions on a message, F8, "
                   "show it; `selfref-tui history` lists them).", severity="warning")
        return None
    return int(text)


@handler("rewind")
async def _rewind(app: CommandHost, command: Command) -> bool:
    if not command.args:
        app.pick_rewind()
        return True
    if command.args[0].lower() == "undo":
        return await app.undo_rewind()
    n = _number(app, command.args[0], "/rewind [N|undo]")
    return n is not None and await app.rewind_to(n)


@handler("edit")
async def _edit(app: CommandHost, command: Command) -> bool:
    if command.args:
        n = _number(app, command.args[0], "/edit [N]")
        return n is not None and await app.edit_message(n)
    app.action_edit_last()
    return True


@handler("regenerate")
async def _regenerate(app: CommandHost, command: Command) -> bool:
    return await app.regenerate()


@handler("branch")
async def _branch(app: CommandHost, command: Command) -> bool:
    from selfref_tui.selfref.keys import validate_name

    name = command.args[0] if command.args else None
    if name is not None:
        try:
            validate_name(name)
        except ValueError as exc:
            app.notify(str(exc), severity="warning")
            return False
    n = app.branch_point(app.transcript.highlighted_item())
    app.run_worker(app.branch_from(n, name), exclusive=True, group="steer")
    return True


@handler("compact")
async def _compact(app: CommandHost, command: Command) -> bool:
    # No message of the person's is made up: the runtime asks the model (a note
    # the transcript does not show), at once when idle, at the next step when busy.
    # The focus is the person's own text: it goes to the model in the runtime's note.
    if app.controller.compact(command.text) == "queued":
        app.notify("Compaction requested: it happens at the next step.")
    # The person asked for it: show it happen, even when reading further up.
    app.transcript.scroll_bottom()
    return True


@handler("remember")
async def _remember(app: CommandHost, command: Command) -> bool:
    exp_id = app.controller.remember(command.text)
    app.notify(f"Remembered as {exp_id}.")
    app._refresh_sidebar()
    return True


@handler("forget")
async def _forget(app: CommandHost, command: Command) -> bool:
    app.forget(command.args[0])
    return True


@handler("export")
async def _export(app: CommandHost, command: Command) -> bool:
    ref_id, *path = command.args
    app.export_ref_by_id(ref_id, path[0] if path else None)
    return True


@handler("attach", needs_agent=False)
async def _attach(app: CommandHost, command: Command) -> bool:
    """The image becomes a chip in the input, sent with the next message.

    Read in a thread (up to 20 MB); a refusal (no such file, a folder, not an
    image, too big) is one line and keeps the command in the input to fix.
    """
    import asyncio

    from selfref_tui.selfref.attach import AttachError, read_image

    try:
        image = await asyncio.to_thread(read_image, command.text)
    except AttachError as exc:
        app.notify(str(exc), severity="warning", timeout=8)
        return False
    app.chat_input.add_image(image)
    return True


def _message_number(app: CommandHost, command: Command) -> tuple[bool, int | None]:
    """(ok, N) from ``/pin N``; no argument is (True, None): the highlighted message."""
    if not command.args:
        return True, None
    text = command.args[0].lstrip("#")
    if not is_number(text):
        app.notify(f"/{command.name} takes a message number (as `selfref-tui history` shows "
                   f"it), not {command.args[0]!r}.", severity="warning")
        return False, None
    return True, int(text)


@handler("pin")
async def _pin(app: CommandHost, command: Command) -> bool:
    ok, n = _message_number(app, command)
    return ok and app.pin_message(n, True)


@handler("unpin")
async def _unpin(app: CommandHost, command: Command) -> bool:
    ok, n = _message_number(app, command)
    return ok and app.pin_message(n, False)
