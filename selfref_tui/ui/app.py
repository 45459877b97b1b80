"""The Textual app: layout, start-up, input, key actions and slash commands.

The app shows; :class:`~selfref_tui.agent.chat.controller.ChatController` decides.
The controller owns the agent, the input router and the memory key's
lifecycle (open, switch, release, early inputs, refusals); the app composes
the widgets, binds keys, and turns the controller's answers into what is on
screen. Slash commands are a table (``command_handlers.py``); runtime events
reach the widgets through :class:`EventBridge` (``event_bridge.py``), mixed in
here, as are the other concerns, one module each: start-up (``boot_actions.py``),
sending, commands, retry and Esc (``send_actions.py``), help, context and the
sidebar (``view_actions.py``), quitting (``quit_actions.py``), the theme
(``theme_actions.py``), keys, refs, forks, find, steering and the rest
(``*_actions.py``); notifications, the clipboard and links stay plain text
(``plain_output.py``). The ``@on`` handlers stay here: Textual collects them from the
app's own class only.

Start-up never waits: ``compose`` builds the whole screen from the config
alone; a worker then starts the runtime (openai is a heavy import, done in a
thread), opens the memory key and mounts its history tail-first. Input typed
before that is kept by the controller and sent when the key is open.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, on
from textual.app import App, ComposeResult, SystemCommand
from textual.containers import Container, Horizontal, Vertical
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import TextArea

from selfref_tui.agent.chat.controller import ChatController, Refused
from selfref_tui.config import AppConfig
from selfref_tui.safety import inert_line
from selfref_tui.ui.boot_actions import BootActions
from selfref_tui.ui.event_bridge import EventBridge
from selfref_tui.ui.find_actions import FindActions
from selfref_tui.ui.focus_ring import FocusRing
from selfref_tui.ui.fork_actions import ForkActions
from selfref_tui.ui.gc_pauses import GcPauses, IdleCollect
from selfref_tui.ui.key_actions import KeyActions
from selfref_tui.ui.keymap import BINDINGS, check_keymap
from selfref_tui.ui.lazy_import import LazyModule
from selfref_tui.ui.pin_actions import PinActions
from selfref_tui.ui.plain_output import PlainOutput
from selfref_tui.ui.quit_actions import QuitActions
from selfref_tui.ui.ref_actions import RefActions
from selfref_tui.ui.send_actions import SendActions
from selfref_tui.ui.settings_actions import SettingsActions
from selfref_tui.ui.steer_actions import SteerActions
from selfref_tui.ui.theme_actions import ThemeActions
from selfref_tui.ui.toast_room import ToastRoom
from selfref_tui.ui.view_actions import ViewActions
from selfref_tui.ui.widgets.app_footer import NARROW_BELOW, AppFooter
from selfref_tui.ui.widgets.app_header import AppHeader
from selfref_tui.ui.widgets.chat_input import ChatInput
from selfref_tui.ui.widgets.experience_list import ExperienceList
from selfref_tui.ui.widgets.ref_list import RefList
from selfref_tui.ui.widgets.sidebar import Sidebar
from selfref_tui.ui.widgets.transcript import Transcript

if TYPE_CHECKING:
    from textual.driver import Driver

    from selfref_tui.agent import events as ev
    from selfref_tui.ui import command_handlers
    from selfref_tui.ui import commands as slash
    from selfref_tui.ui.widgets.fork_panel import ForkPanel
else:  # events exist once the runtime does, after the first frame
    ev = LazyModule("selfref_tui.agent.events")
    # the first frame runs no command; the first Enter or F1 imports the table
    command_handlers = LazyModule("selfref_tui.ui.command_handlers")
    slash = LazyModule("selfref_tui.ui.commands")


#: the input's placeholder, longest first: a narrow input shows the longest that fits
PLACEHOLDER = (
    "Message  (Enter send · shift+enter/ctrl+j newline · / commands · F1 help)",
    "Message  (Enter send · shift+enter newline · / commands · F1 help)",
    "Message  (Enter send · / commands · F1 help)",
    "Message  (F1 help)",
)


class SelfRefApp(
    EventBridge, BootActions, SendActions, ViewActions, PlainOutput, KeyActions, FocusRing,
    ForkActions, RefActions, SettingsActions, FindActions, SteerActions, PinActions, QuitActions,
    ThemeActions, IdleCollect, ToastRoom, App[int],
):
    #: absolute, so subclasses (tests, benchmarks) in other directories find it
    CSS_PATH = str(Path(__file__).with_name("app.tcss"))
    TITLE = "selfref-tui"
    BINDINGS = BINDINGS
    #: the screen gets -narrow below 100 columns (see app.tcss)
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [
        (0, "-narrow"), (NARROW_BELOW, "-wide")
    ]

    def __init__(
        self,
        config: AppConfig,
        *,
        tail_items: int = 50,
        clock: Callable[[], float] = time.monotonic,
        read_only: bool = False,
    ) -> None:
        super().__init__()
        #: the agent, the router and the key's lifecycle: everything but the screen
        self.controller = ChatController(config, read_only=read_only)
        #: what the meter and fork panel time with; fixed in snapshots for steady figures
        self.clock = clock
        self.tail_items = tail_items
        self._events: list[ev.AgentEvent] = []
        self._drain_posted = False
        #: open questions from tools: question_id -> (asking key, its dialog)
        self._questions: dict[str, tuple[str, Screen[Any]]] = {}
        #: characters streamed in this answer; tokens ≈ chars/4, whatever the burst sizes
        self._stream_chars = 0
        #: the question an unsent draft raises on quit, while it is on screen
        self._quit_prompt: Screen[bool] | None = None
        self._stopped_at = float("-inf")
        self._idle_esc_at = float("-inf")
        self.gc_pauses = GcPauses()
        self._gc_timer: Timer | None = None
        #: the transcript widget, set by compose
        self._transcript: Transcript | None = None
        #: the next idle collection walks the frozen objects too
        self._gc_everything = False
        keymap, self.config_warnings = check_keymap(config.keymap)
        self._user_keymap = keymap
        #: the theme config.toml holds: a change to another is saved there
        self._theme_saved = self.theme
        if config.theme in self.available_themes:
            self._theme_saved = config.theme
            self.theme = config.theme  # before the first frame: no flash of another theme
        elif config.theme:
            known = ", ".join(sorted(self.available_themes))
            self.config_warnings.append(f"theme {config.theme!r} in config.toml is not a theme; "
                                        f"using {self.theme} (known: {known})")

    # ------------------------------------------------- the controller's state
    # Read through the app by the event bridge, tests and benchmarks.

    @property
    def config(self) -> AppConfig:
        return self.controller.config

    @config.setter
    def config(self, config: AppConfig) -> None:
        """Before start-up (tests, the welcome screen): what the runtime will start with."""
        self.controller.config = config

    @property
    def key(self) -> str:
        """The memory key on screen."""
        return self.controller.key

    @property
    def read_only(self) -> bool:
        return self.controller.read_only

    @property
    def ready(self) -> bool:
        return self.controller.ready

    @property
    def key_error(self) -> str | None:
        return self.controller.key_error

    @property
    def agent(self) -> Any:
        return self.controller.agent

    @property
    def router(self) -> Any:
        return self.controller.router

    @property
    def mcp(self) -> Any:
        return self.controller.mcp

    # ------------------------------------------------------------ layout

    def get_driver_class(self) -> type[Driver]:
        """Textual's terminal driver, reading pastes and stray bytes safely (input_driver.py)."""
        driver = super().get_driver_class()
        if (driver.__module__, driver.__name__) == ("textual.drivers.linux_driver",
                                                    "LinuxDriver"):  # not on Windows
            from selfref_tui.ui.input_driver import GuardedDriver

            return GuardedDriver
        return driver

    def compose(self) -> ComposeResult:
        provider = self.config.provider
        yield AppHeader(
            # Without --key the key is the one shown last, read after the first frame:
            # no name until then (a "main" that flips to another read as history lost).
            key="" if self.config.resume else self.key,
            provider=provider.name,
            model=self._model_name(),
            demo=provider.demo,
            read_only=self.read_only,
        )
        with Horizontal(id="body"):
            with Vertical(id="chat"):
                # The transcript's own box: the fork panel lies over it (app.tcss),
                # never over the input below.
                with Container(id="conversation"):
                    self._transcript = Transcript(id="transcript", clock=self.clock)
                    yield self._transcript
                yield ChatInput(id="input", placeholder=PLACEHOLDER)
            # The fork panel starts hidden: boot() mounts it over the transcript after the
            # first frame;
            # the sidebar's lists and meter come just after that frame too.
            yield Sidebar(
                id="sidebar",
                compact_ratio=self.config.agent.auto_compact_ratio,
                clock=self.clock,
                parts_later=True,
            )
        yield AppFooter()

    @property
    def transcript(self) -> Transcript:
        """The one transcript, kept from compose (read on every key: no DOM query)."""
        if self._transcript is None:
            return self.query_one("#transcript", Transcript)  # (raises: not composed yet)
        return self._transcript

    @property
    def chat_input(self) -> ChatInput:
        return self.query_one("#input", ChatInput)

    @property
    def header(self) -> AppHeader:
        return self.query_one(AppHeader)

    @property
    def sidebar(self) -> Sidebar:
        return self.query_one("#sidebar", Sidebar)

    @property
    def fork_panel(self) -> ForkPanel:
        found = self.query("#forks")
        if found:
            return found.first()  # type: ignore[return-value]
        panel = self._new_fork_panel()
        self.query_one("#conversation").mount(panel)  # before boot got to it
        return panel

    def _new_fork_panel(self) -> ForkPanel:
        from selfref_tui.ui.widgets.fork_panel import ForkPanel

        panel = ForkPanel(id="forks", clock=self.clock)
        panel.display = False
        return panel

    def _model_name(self) -> str:
        if self.config.provider.demo:
            from selfref_tui.config import DEMO_MODEL

            return DEMO_MODEL
        return self.config.provider.model

    def on_mount(self) -> None:
        self.gc_pauses.install()
        if self._user_keymap:
            self.set_keymap(self._user_keymap)
        for warning in self.config_warnings:
            self.notify(warning, severity="warning", timeout=8)
        if self.is_headless:
            self.chat_input.cursor_blink = False  # tests and snapshots: a steady frame
        else:
            self.quit_on_hangup()  # a closed terminal keeps the answer streaming, as Esc
        self.chat_input.focus()
        self.call_after_refresh(self.sidebar.mount_parts)  # its lists: "Loading…" till then
        if self.config.unconfigured and not self.config.provider.demo:
            from selfref_tui.ui.screens.welcome import WelcomeScreen

            self.header.status = "not configured"
            self.push_screen(WelcomeScreen(self.config.config_path), self._welcome_done)
        else:
            # After the first frame: the runtime's imports run in a thread, and a
            # thread importing openai holds the GIL the first frame is drawn with.
            self.call_after_refresh(self.boot)

    def _refresh_sidebar(self, memory: Any | None = None) -> None:
        lists = self.controller.sidebar_lists(memory)
        if lists is not None:
            self.sidebar.experiences = lists.experiences
            self.sidebar.refs = lists.refs

    # -------------------------------------------------------------- input

    @on(ChatInput.Submitted)
    async def _submitted(self, message: ChatInput.Submitted) -> None:
        text = message.text
        if slash.is_command(text):
            if await self.run_command(text):
                message.chat_input.accept(text, keep_images=True)
            else:
                message.chat_input.settled()
            return
        text = slash.unescape(text)
        images = message.images
        # one data URL per image, shared by the message and the transcript (each
        # ``url`` is a new string: megabytes for a large picture)
        urls = [image.url for image in images]
        try:
            outcome = self.controller.submit(text, urls, [image.name for image in images])
        except Refused as exc:
            message.chat_input.settled()
            self.refused(exc, " Your text is still in the input.")
            return
        message.chat_input.accept(message.text)
        await self._show_sent(text, outcome, [(url, image.name)
                                              for url, image in zip(urls, images, strict=True)])

    @on(ChatInput.CompleteCommand)
    def _complete_command(self, message: ChatInput.CompleteCommand) -> None:
        """Tab on ``/ex`` → ``/export ``, on ``/mcp restart f`` → a server's name as the
        servers are now; several candidates are named, once."""
        mcp = self.controller.mcp
        servers = list(mcp.status) if mcp is not None else []
        completed, names = slash.complete(message.text, servers)
        words = any(c.isspace() for c in message.text)  # past the command's name
        head, _, rest = message.text[1:].partition(" ")
        naming = " " in rest.lstrip(" ")  # past its word too (restart): a server's name
        if completed != message.text:
            self.chat_input.complete_to(completed)
        elif len(names) > 1 and naming:
            self.notify("  ".join(inert_line(n, 60) for n in names), title="MCP servers",
                        markup=False)
        elif len(names) > 1 and words:
            self.notify("  ".join(f"/{head.lower()} {name}" for name in names),
                        title="Commands", markup=False)
        elif len(names) > 1:
            self.notify("  ".join(f"/{name}" for name in names), title="Commands")
        elif not names and words:
            self.notify("Tab completes /mcp reload and /mcp restart NAME, NAME one of: "
                        f"{', '.join(inert_line(n, 60) for n in servers) or 'no servers'}",
                        severity="warning", markup=False)
        elif not names:
            self.notify(f"No command starts with {message.text}; F1 lists them.",
                        severity="warning")

    @on(ChatInput.ScrollToBottom)
    def _input_end(self) -> None:
        self.transcript.scroll_bottom()

    @on(ChatInput.ScrollPage)
    def _input_page(self, message: ChatInput.ScrollPage) -> None:
        if message.direction < 0:
            self.transcript.scroll_page_up(animate=False)
        else:
            self.transcript.scroll_page_down(animate=False)

    def forget(self, exp_id: str) -> None:
        try:
            found = self.controller.forget(exp_id)
        except Refused as exc:
            self.refused(exc)
            return
        if found:
            self.notify(f"Forgot {exp_id}.")
        else:
            self.notify(
                f"No experience {exp_id}; the sidebar lists them (ctrl+b).", severity="warning"
            )
        self._refresh_sidebar()
        self._keep_focus_visible()  # the list emptied under the cursor: typing must land somewhere

    @on(ExperienceList.ForgetRequested)
    def _forget_requested(self, message: ExperienceList.ForgetRequested) -> None:
        self.forget(message.experience_id)

    @on(ExperienceList.EditRequested)
    def _edit_requested(self, message: ExperienceList.EditRequested) -> None:
        try:
            found = self.controller.edit_experience(message.experience_id, message.text)
        except Refused as exc:
            self.refused(exc)
            return
        if found:
            self.notify(f"Edited {message.experience_id}: the model reads the new text from "
                        "its next step.")
        else:
            self.notify(f"No experience {message.experience_id} any more.", severity="warning")
        self._refresh_sidebar()

    @on(RefList.RefChosen)
    async def _ref_chosen(self, message: RefList.RefChosen) -> None:
        transcript = self.transcript
        while transcript.highlight_ref_id(message.ref_id) is None and transcript.older_count:
            await transcript.load_older()

    @on(Transcript.RefHighlighted)
    def _ref_highlighted(self, message: Transcript.RefHighlighted) -> None:
        self.sidebar.ref_list.highlight_ref(message.ref_id)

    # ------------------------------------------------------------- actions

    async def on_unmount(self) -> None:
        self.gc_pauses.uninstall()
        await self.shutdown_runtime()
        self.after_signal_shutdown()  # a closed terminal: no teardown on it

    # ------------------------------------------------------------- typing

    @on(TextArea.Changed)
    def _typed(self, message: TextArea.Changed) -> None:
        self.gc_pauses.key_pressed()
        if self._notifications:  # a taller input must not go under a toast
            self._fit_toasts_soon()
        transcript = self._transcript  # kept from compose: no DOM query per key
        if message.text_area.text and transcript is not None:  # not the input emptied by a send
            transcript.person_typed()

    # ------------------------------------------------------- trust boundary

    @on(events.DeliveryComplete)
    def _screenshot_saved(self, event: events.DeliveryComplete) -> None:
        """The palette's Screenshot, said in plain text (Textual's own notice is markup)."""
        if event.name == "screenshot":
            event.prevent_default()
            where = f" to {event.path}" if event.path is not None else ""
            self.notify(f"Saved the screenshot{where}.", title="Screenshot")

    # ------------------------------------------------------------- palette

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for binding in BINDINGS:
            if binding.id in ("command_palette", "quit"):
                continue
            yield SystemCommand(
                f"{binding.description} ({self._key_label(binding.id, binding.key)})",
                binding.tooltip,
                _action(self, binding.action),
            )
        # every command that runs without arguments: /model (its picker), /save (its
        # dialog), /rewind (the list)… as well as /context
        for spec in slash.COMMANDS:
            if not spec.min_args:
                yield SystemCommand(f"/{spec.name}", spec.help, _command(self, f"/{spec.name}"))


def _action(app: SelfRefApp, action: str):
    return lambda: app.run_action(action)


def _command(app: SelfRefApp, text: str):
    return lambda: app.run_worker(app.run_command(text))


def run_app(config: AppConfig, *, read_only: bool = False) -> int:
    """What ``selfref-tui`` with no sub-command runs."""
    app = SelfRefApp(config, read_only=read_only)
    result = app.run()
    return int(result or 0)
