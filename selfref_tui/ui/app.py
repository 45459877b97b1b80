"""The Textual app: layout, start-up, input, key actions and slash commands.

Start-up never waits: ``compose`` builds the whole screen from the config
alone; an async worker then starts the demo server (if any), imports the
runtime (openai is a heavy import), opens the memory key in a thread and
mounts its history tail-first. Input typed before that is kept and sent
when the agent is ready.

Runtime events reach the widgets through :class:`EventBridge`
(``event_bridge.py``), mixed in here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Footer, Input, TextArea

from selfref_tui.config import AppConfig
from selfref_tui.safety import inert, inert_line, redact
from selfref_tui.ui import commands as slash
from selfref_tui.ui.event_bridge import EventBridge
from selfref_tui.ui.gc_pauses import QUIET_S, GcPauses
from selfref_tui.ui.keymap import BINDINGS, check_keymap
from selfref_tui.ui.lazy_import import LazyModule
from selfref_tui.ui.widgets.app_header import AppHeader
from selfref_tui.ui.widgets.chat_input import ChatInput
from selfref_tui.ui.widgets.experience_list import ExperienceList
from selfref_tui.ui.widgets.ref_list import RefList
from selfref_tui.ui.widgets.sidebar import Sidebar
from selfref_tui.ui.widgets.transcript import Transcript

if TYPE_CHECKING:
    from selfref_tui.agent import events as ev
    from selfref_tui.ui.widgets.fork_panel import ForkPanel
else:  # events exist once the runtime does, after the first frame
    ev = LazyModule("selfref_tui.agent.events")

#: keys the chat input handles itself, listed on the help screen after the app's bindings
INPUT_KEYS = [
    ("enter", "Send (shift+enter or ctrl+j: new line)"),
    ("up", "On an empty input: recall earlier inputs"),
    ("end", "On an empty input: back to the bottom of the transcript"),
    ("pageup / pagedown", "Scroll the transcript"),
    ("tab / shift+tab", "Move to the experiences and refs lists and back"),
    ("ctrl+g", "Expand a long paste shown as [pasted N lines #1] (the full text is sent)"),
]

#: a second Esc this soon after a stop is the same press repeated, not a new stop
ESC_REPEAT_S = 0.5

#: how long the start-up check waits for the provider before calling it not answering
PROVIDER_CHECK_S = 5.0

PLACEHOLDER = "Message  (Enter send · shift+enter/ctrl+j newline · / commands · F1 help)"


class SelfRefApp(EventBridge, App[int]):
    #: absolute, so subclasses (tests, benchmarks) in other directories find it
    CSS_PATH = str(Path(__file__).with_name("app.tcss"))
    TITLE = "selfref-tui"
    BINDINGS = BINDINGS
    #: the screen gets -narrow below 100 columns (see app.tcss)
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [(0, "-narrow"), (100, "-wide")]

    def __init__(
        self,
        config: AppConfig,
        *,
        tail_items: int = 50,
        clock: Callable[[], float] = time.monotonic,
        read_only: bool = False,
    ) -> None:
        super().__init__()
        self.config = config
        #: --read-only: keys are opened without their lock; anything that writes is refused
        self.read_only = read_only
        #: what the meter and fork panel time with; fixed in snapshots for steady figures
        self.clock = clock
        self.tail_items = tail_items
        self.key = config.key
        self.agent: Any = None
        self.router: Any = None
        self.selfref: Any = None
        self.demo_server: Any = None
        #: the MCP servers' manager (agent.mcp.manager), started after the first frame
        self.mcp: Any = None
        self.ready = False
        #: why the current key cannot take input (locked, corrupt…); None when it can
        self.key_error: str | None = None
        self._events: list[ev.AgentEvent] = []
        self._drain_posted = False
        #: open questions from tools: question_id -> (asking key, its dialog)
        self._questions: dict[str, tuple[str, Screen[Any]]] = {}
        self._early_inputs: list[str] = []
        #: characters streamed in this answer; tokens ≈ chars/4, whatever the burst sizes
        self._stream_chars = 0
        self._closed = False
        #: the question an unsent draft raises on quit, while it is on screen
        self._quit_prompt: Screen[bool] | None = None
        self._stopped_at = float("-inf")
        #: where the last export went: the export dialog starts there
        self._last_export_dir: Path | None = None
        self.gc_pauses = GcPauses()
        self._gc_timer: Timer | None = None
        keymap, self.keymap_warnings = check_keymap(config.keymap)
        self._user_keymap = keymap

    # ------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        provider = self.config.provider
        yield AppHeader(
            key=self.key,
            provider=provider.name,
            model=self._model_name(),
            demo=provider.demo,
            read_only=self.read_only,
        )
        with Horizontal(id="body"):
            with Vertical(id="chat"):
                yield Transcript(id="transcript")
                yield ChatInput(id="input", placeholder=PLACEHOLDER)
            # The fork panel starts hidden: boot() mounts it after the first frame.
            yield Sidebar(
                id="sidebar", compact_ratio=self.config.agent.auto_compact_ratio, clock=self.clock
            )
        yield Footer()

    @property
    def transcript(self) -> Transcript:
        return self.query_one("#transcript", Transcript)

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
        self.query_one("#body").mount(panel, before=self.sidebar)  # before boot got to it
        return panel

    def _new_fork_panel(self) -> ForkPanel:
        from selfref_tui.ui.widgets.fork_panel import ForkPanel

        panel = ForkPanel(id="forks", clock=self.clock)
        panel.display = False
        return panel

    def _model_name(self) -> str:
        if self.config.provider.demo:
            from selfref_tui.demo.script import DEMO_MODEL

            return DEMO_MODEL
        return self.config.provider.model

    def on_mount(self) -> None:
        self.gc_pauses.install()
        if self._user_keymap:
            self.set_keymap(self._user_keymap)
        for warning in self.keymap_warnings:
            self.notify(warning, severity="warning", timeout=8)
        if self.is_headless:
            self.chat_input.cursor_blink = False  # tests and snapshots: a steady frame
        self.chat_input.focus()
        if self.config.unconfigured and not self.config.provider.demo:
            from selfref_tui.ui.screens.welcome import WelcomeScreen

            self.header.status = "not configured"
            self.push_screen(WelcomeScreen(), self._welcome_done)
        else:
            # After the first frame: the runtime's imports run in a thread, and a
            # thread importing openai holds the GIL the first frame is drawn with.
            self.call_after_refresh(self.boot)

    def _welcome_done(self, choice: str | None) -> None:
        if choice == "demo":
            self.config = replace(
                self.config, provider=replace(self.config.provider, demo=True), unconfigured=False
            )
            self.header.model, self.header.demo = self._model_name(), True
            self.boot()
        else:
            self.exit(0)

    # ------------------------------------------------------------- start-up

    @work(exclusive=True, group="boot")
    async def boot(self) -> None:
        """Everything slow, after the first frame: demo server, runtime import, store."""
        provider_config = self.config.provider
        if not self.query("#forks"):
            await self.query_one("#body").mount(self._new_fork_panel(), before=self.sidebar)
        try:
            if provider_config.demo:
                # The demo server paced like a real model, so Esc on a long answer can be tried.
                from selfref_tui.demo import demo_provider, demo_server

                self.demo_server = demo_server()
                url = await self.demo_server.start()
                provider_config = demo_provider(url)
            await self.load_runtime()
            from selfref_tui.agent.loop import Agent
            from selfref_tui.agent.provider import Provider
            from selfref_tui.agent.router import AgentInputRouter
            from selfref_tui.agent.window import ASSUMED_WINDOW
            from selfref_tui.selfref.reference import SelfReference

            self.selfref = SelfReference(
                self.config.data_dir, source=self.config.data_dir_source
            )
            if self.read_only:
                from selfref_tui.selfref.reference import ReadOnlyReference

                self.selfref = ReadOnlyReference(self.selfref)
            provider = Provider(provider_config)
            self.agent = Agent(
                self.selfref,
                provider,
                self.config.agent,
                self.emit,
                model=provider_config.model,
                context_window=provider_config.context_window or ASSUMED_WINDOW,
            )
            self.agent.interactive = True  # tools may ask: see _ask
            self.router = AgentInputRouter(self.agent, self.key)
            self._start_mcp()
        except Exception as exc:  # never crash the first frame; say what failed
            self.header.status = "not ready"
            await self.transcript.add_error(self.secret_free(f"Could not start: {exc}"))
            self.notify(f"Could not start: {exc}", severity="error", timeout=10)
            return
        self.ready = True
        if not provider_config.context_window:
            self.learn_window(provider_config)
        if not provider_config.demo:
            self._check_provider()
        await self.open_key(self.key)
        self._load_token_encoder()
        # Typed before the agent was ready: opening the key cleared them off the
        # transcript; they go out now, in order, shown as any message is.
        early, self._early_inputs = self._early_inputs, []
        for text in early:
            await self._send(text)

    def _start_mcp(self) -> None:
        """MCP servers start in the background; their tools join as each is ready."""
        if not self.config.mcp_servers:
            return
        from dataclasses import replace as with_key

        from selfref_tui.agent.mcp.manager import McpManager

        path = self.config.config_path

        def save_trust(server: str, tool: str) -> None:
            if path is not None:
                from selfref_tui.agent.mcp.trust import add_trust

                add_trust(path, server, tool)

        # A notice concerns whichever key is shown, not the one open when it started.
        self.mcp = McpManager(self.config.mcp_servers,
                              lambda e: self.emit(with_key(e, key=self.key)), on_trust=save_trust)
        self.agent.tool_sources.append(self.mcp)
        self.mcp.start()

    @work(exclusive=True, group="window", exit_on_error=False)
    async def learn_window(self, provider_config: Any) -> None:
        """Ask the server for the model's window, in the background (agent/window.py)."""
        from selfref_tui.agent.events import Notice
        from selfref_tui.agent.window import CACHE_FILE, WindowCache, resolve_window

        data_dir = self.config.data_dir
        window = await resolve_window(
            provider_config, WindowCache(data_dir / CACHE_FILE if data_dir else None)
        )
        if self.agent is None:
            return
        self.agent.context_window = window.tokens
        self._refresh_usage()
        note = window.notice()
        if note:
            self.emit(Notice(key=self.key, message=note, severity="warning"))

    @work(exclusive=True, group="provider-check", exit_on_error=False)
    async def _check_provider(self) -> None:
        """One quick request after start-up, so "ready" never hides a server that is down.

        Off the first frame's path (boot runs after it) and off the key's loading;
        only failures that mean "nothing will work" are shown: a server that does
        not list models is not a problem.
        """
        from selfref_tui.agent.provider import ProviderError

        try:
            await asyncio.wait_for(self.agent.provider.list_models(), PROVIDER_CHECK_S)
        except TimeoutError:
            note = "provider not answering"
        except ProviderError as exc:
            note = {"connection": "provider unreachable", "timeout": "provider not answering",
                    "auth": "API key refused"}.get(exc.kind, "")
        except Exception:
            return
        else:
            note = ""
        self.header.provider_note = note

    @work(exclusive=True, group="encoder", exit_on_error=False)
    async def _load_token_encoder(self) -> None:
        """Exact token counts from the start, not only after the first turn.

        Until tiktoken's encoding is loaded the runtime estimates (chars/4), so a
        restart showed 606 where the same history had read 567 before it. The
        encoding loads in a thread after the key is on screen, then the meter is
        counted again.
        """
        tokens = self.agent.tokens
        if not tokens.ready:
            from selfref_tui.selfref.encodings import load_encoder

            try:
                encode = await asyncio.to_thread(load_encoder, self.agent.model or "gpt-4o-mini")
            except Exception:  # offline data missing: estimates it is
                return
            if not tokens.ready:
                tokens.set_encoder(encode)
        self._refresh_usage()

    async def load_runtime(self) -> None:
        """openai takes ~0.5 s to import: do it off the loop so keys stay live."""
        await asyncio.to_thread(_preload_runtime)

    async def open_key(self, key: str) -> bool:
        """Show ``key``: its history (tail first), experiences, refs and forks."""
        from selfref_tui.selfref.errors import CorruptStoreError, StoreError

        self.header.key, self.header.status = key, "loading…"
        self.sidebar.experiences = self.sidebar.refs = None  # "Loading…", not "nothing"
        self.sidebar.meter.forget_last_answer()
        await self.transcript.reset()
        self.fork_panel.clear()
        try:
            try:
                memory = await asyncio.to_thread(self.agent.memory, key)
            except CorruptStoreError as exc:
                # The store moved the damaged log aside (kept for recovery); say so,
                # then carry on with the key as it now stands.
                await self.transcript.add_error(str(exc), "store")
                self.notify(str(exc), title=f"Memory key {key!r}", severity="error", timeout=10)
                memory = await asyncio.to_thread(self.agent.memory, key)
        except StoreError as exc:
            self.key_error = str(exc)
            await self._key_unavailable(key, str(exc))
            self.notify(str(exc), title=f"Memory key {key!r}", severity="error", timeout=10)
            return False
        except Exception as exc:
            self.key_error = f"Cannot open memory key {key!r}: {exc}"
            await self._key_unavailable(key, self.key_error)
            return False
        self.key_error = None
        for warning in memory.take_warnings():  # skipped damaged records, a torn write
            self.notify(warning, title="Memory key", severity="warning", timeout=15)
        if not self.read_only:
            # A key opened here is listed (switcher, `keys list`) before its first message.
            await asyncio.to_thread(self.selfref.create, key)
        previous, self.key = self.key, key
        if previous != key:
            self.agent.release(previous)  # another window may write it now
        if self.router is not None:
            self.router.key = key
        # Early inputs are about to be sent: no hint to flash up before them.
        self.transcript.set_empty_hint("" if self._early_inputs else self._empty_hint(key))
        await self.transcript.load_history(memory.history, tail=self.tail_items)
        self.chat_input.recall_from(
            [
                m["content"]
                for m in memory.history
                if m.get("role") == "user"
                and isinstance(m.get("content"), str)
                and m.get("compaction") is None
                and not m.get("runtime_note")
            ]
        )
        self._refresh_sidebar(memory)
        forks = getattr(memory, "forks", {}) or {}
        if forks:
            self.fork_panel.load_forks(forks.values())
        self.header.status = "ready"
        self._refresh_usage()
        self.collect_when_idle()  # loading a long history leaves garbage behind too
        return True

    async def _key_unavailable(self, key: str, why: str) -> None:
        self.header.status = "unavailable"
        self.sidebar.experiences = self.sidebar.refs = ()  # not "loading…" forever
        await self.transcript.add_error(why, "store")

    @work(exclusive=True, group="usage")
    async def _refresh_usage(self) -> None:
        """Token count of the next call, computed off the loop (it may encode a lot)."""
        if self.agent is None or self.key_error:
            return
        key = self.key
        try:
            plan = await asyncio.to_thread(self.agent.preview_request, key)
        except Exception:
            return
        if key == self.key:
            meter = self.sidebar.meter
            meter.tokens, meter.window = plan.tokens, self.agent.context_window
            meter.estimated = plan.estimated

    def _refresh_sidebar(self, memory: Any | None = None) -> None:
        if memory is None:
            if self.agent is None or self.key_error:
                return
            try:
                memory = self.agent.memory(self.key)
            except Exception:
                return
        self.sidebar.experiences = list(memory.experiences)
        rows: list[dict] = []
        for ref_id, occurrences in memory.refs.items():
            for index, occurrence in enumerate(occurrences):
                rows.append(
                    {
                        "id": ref_id,
                        "content": occurrence.get("content", ""),
                        "superseded": index < len(occurrences) - 1,
                        "order": occurrence.get("message_index", 0),
                    }
                )
        rows.sort(key=lambda r: r["order"])
        self.sidebar.refs = rows

    def _empty_hint(self, key: str) -> Content:
        """A new conversation says what the agent can do and where to look."""
        sidebar, forks = self._key_label("toggle_sidebar", "ctrl+b"), self._key_label(
            "toggle_forks", "ctrl+f"
        )
        export, helps = self._key_label("export_ref", "ctrl+s"), self._key_label("help", "f1")
        parts: list[str | tuple[str, str]] = [
            "A new conversation on key ",
            (inert_line(key), "bold"),
            ".\n\nThe agent remembers facts across sessions (the sidebar, ",
            (sidebar, "bold $accent"),
            "), wraps output worth keeping in refs you can export (",
            (export, "bold $accent"),
            "), compacts a long history by itself, and can fork helper agents (",
            (forks, "bold $accent"),
            ").\n\n",
            (helps.upper() if len(helps) <= 3 else helps, "bold $accent"),
            " keys and slash commands · ",
            ("/context", "bold $accent"),
            " what the model will see next",
        ]
        if self.config.provider.demo:
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

    # -------------------------------------------------------------- input

    @on(ChatInput.Submitted)
    async def _submitted(self, message: ChatInput.Submitted) -> None:
        text = message.text
        if slash.is_command(text):
            if await self.run_command(text):
                message.chat_input.accept(text)
            return
        text = slash.unescape(text)
        if not self.ready:
            message.chat_input.accept(message.text)
            self._early_inputs.append(text)
            await self.transcript.add_user(text, queued=True)
            return
        if self.key_error:
            self.notify(
                f"{self.key_error} Your text is still in the input.", severity="error", timeout=8
            )
            return
        if self._refuse_read_only("send messages"):
            return
        message.chat_input.accept(message.text)
        await self._send(text)

    async def _send(self, text: str) -> None:
        outcome = self.router.submit(text)
        await self.transcript.add_user(text, queued=outcome == "queued")
        self.transcript.scroll_bottom()  # what one sends is followed, wherever one was reading

    @on(ChatInput.ScrollToBottom)
    def _input_end(self) -> None:
        self.transcript.scroll_bottom()

    @on(ChatInput.ScrollPage)
    def _input_page(self, message: ChatInput.ScrollPage) -> None:
        if message.direction < 0:
            self.transcript.scroll_page_up(animate=False)
        else:
            self.transcript.scroll_page_down(animate=False)

    async def run_command(self, text: str) -> bool:
        """Run a slash command; False keeps the text in the input (it needs fixing)."""
        try:
            command = slash.parse_command(text)
        except slash.CommandError as exc:
            self.notify(str(exc), severity="warning")
            return False
        name = command.name
        if name == "help":
            self.action_help()
            return True
        if name == "new":
            return self.action_new_key() is None
        if name == "key":
            return await self.switch_key(command.args[0])
        if not self._agent_ready():
            return False
        if name in ("compact", "remember", "forget") and self._refuse_read_only(f"/{name}"):
            return False
        if name == "context":
            self.action_show_context()
        elif name == "mcp":
            from selfref_tui.ui.screens.mcp_servers import McpServersScreen

            self.push_screen(McpServersScreen(self.mcp.overview() if self.mcp else []))
        elif name == "retry":
            self.action_retry()
        elif name == "compact":
            self.agent.request_compaction(self.key)
            if self.router.busy:
                self.notify("Compaction requested: it happens at the next step.")
            else:
                self.router.submit("Please compact the conversation now.")
                await self.transcript.add_user("Please compact the conversation now.")
            # The person asked for it: show it happen, even when reading further up.
            self.transcript.scroll_bottom()
        elif name == "remember":
            exp_id = self.agent.remember_experience(self.key, command.text)
            self.notify(f"Remembered as {exp_id}.")
            self._refresh_sidebar()
        elif name == "forget":
            self.forget(command.args[0])
        elif name == "export":
            self.export_ref_by_id(
                command.args[0], command.args[1] if len(command.args) > 1 else None
            )
        return True

    def _agent_ready(self) -> bool:
        if not self.ready:
            self.notify("Still starting up; try again in a moment.", severity="warning")
            return False
        if self.key_error:
            self.notify(self.key_error, severity="error")
            return False
        return True

    def _refuse_read_only(self, what: str) -> bool:
        """True (and says why) when this window is read-only and ``what`` would write."""
        if not self.read_only:
            return False
        self.notify(
            f"Read-only window (--read-only): it cannot {what}. Quit, and start selfref-tui "
            "without --read-only once no other window writes this key.",
            severity="warning",
            timeout=8,
            markup=False,
        )
        return True

    def forget(self, exp_id: str) -> None:
        if not self._agent_ready() or self._refuse_read_only("forget experiences"):
            return
        if self.agent.forget_experience(self.key, exp_id):
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

    @on(RefList.RefChosen)
    async def _ref_chosen(self, message: RefList.RefChosen) -> None:
        transcript = self.transcript
        while transcript.highlight_ref_id(message.ref_id) is None and transcript.older_count:
            await transcript.load_older()

    @on(Transcript.RefHighlighted)
    def _ref_highlighted(self, message: Transcript.RefHighlighted) -> None:
        self.sidebar.ref_list.highlight_ref(message.ref_id)

    # ------------------------------------------------------------- actions

    def action_retry(self) -> None:
        """Send the failed last message again (``/retry``, F5)."""
        if not self._agent_ready():
            return
        outcome = self.router.retry()
        if outcome == "busy":
            self.notify("A turn is running; wait for it or press Esc first.", severity="warning")
        elif outcome == "nothing":
            self.notify("Nothing to retry: the last message did not fail.")

    def action_abort(self) -> None:
        self.chat_input.focus()
        now = self.clock()
        if now - self._stopped_at < ESC_REPEAT_S:
            # A double press stops once: the turn running now is the message the
            # person queued before, started by the first Esc's stop.
            return
        if self.router is not None and self.router.abort():
            self._stopped_at = now
            self.header.status = "stopping…"

    def action_ref_prev(self) -> None:
        if self.transcript.move_highlight(-1) is None:
            self.notify("Nothing to highlight in this conversation yet.")

    def action_ref_next(self) -> None:
        if self.transcript.move_highlight(+1) is None:
            self.notify("Nothing to highlight in this conversation yet.")

    def action_scroll_bottom(self) -> None:
        self.transcript.scroll_bottom()

    def action_copy_ref(self) -> None:
        target = self.transcript.target()
        if target is None:
            self.notify("Nothing to copy yet.", severity="warning")
            return
        if not hasattr(target, "ref_id"):  # a message or a code block: its text as shown
            text = target.copy_text
            self.copy_to_clipboard(text)
            self.notify(
                f"Sent {len(text)} characters to the terminal's clipboard "
                "(OSC 52; F1 says what the terminal must allow).",
                markup=False,
            )
            return
        block = target
        from selfref_tui.refs.export import export_plan

        # The same text an export writes: a ref that is one code fence copies as code.
        text = export_plan(block.ref_id, block.text_so_far).content
        self.copy_to_clipboard(text)
        # The app cannot know whether the terminal honoured the OSC 52 request (tmux
        # without set-clipboard drops it), so it says what it did, not "Copied".
        self.notify(
            inert_line(
                f"Sent ref:{block.ref_id} ({len(text)} characters) to the terminal's clipboard "
                "(OSC 52; F1 says what the terminal must allow)."
            ),
            markup=False,
        )

    def action_export_ref(self) -> None:
        block = self.transcript.target_ref()
        if block is None:
            self.notify("No ref to export yet.", severity="warning")
            return
        if not block.closed:
            self.notify(
                f"ref:{block.ref_id} is not finished; only complete refs can be exported.",
                severity="warning",
            )
            return
        self.export_ref(block.ref_id, block.content or "", None)

    def export_ref_by_id(self, ref_id: str, path: str | None) -> None:
        ref_id = ref_id.removeprefix("ref:")
        occurrences = self.agent.memory(self.key).refs.get(ref_id)
        if not occurrences:
            self.notify(f"No ref {ref_id!r} in this memory key.", severity="warning")
            return
        self.export_ref(ref_id, occurrences[-1].get("content", ""), path)

    @work(exclusive=True, group="export")
    async def export_ref(self, ref_id: str, content: str, path: str | None) -> None:
        """Dialog → existing file? overwrite/append/cancel → write → notify the full path.

        A failed write re-opens the dialog with the typed path and the error,
        so nothing typed is lost; the next export starts in the folder used last.
        """
        from selfref_tui.refs.export import export_plan
        from selfref_tui.selfref.export_path import export_target
        from selfref_tui.selfref.files import write_file
        from selfref_tui.ui.screens.export_dialog import ExportDialog
        from selfref_tui.ui.screens.overwrite_prompt import OverwritePrompt

        plan = export_plan(ref_id, content)
        typed = path
        error = ""
        folder = self._last_export_dir or Path.cwd()
        while True:
            if typed is None or error:
                typed = await self.push_screen_wait(
                    ExportDialog(
                        ref_id,
                        typed or str(folder / plan.suggested_name),
                        preview=plan.content,
                        error=error,
                        suggested_name=plan.suggested_name,
                    )
                )
                if not typed:
                    return
            try:
                target = export_target(typed, plan.suggested_name)
            except ValueError as exc:
                error = str(exc)
                continue
            mode = "write"
            if target.is_file():
                mode = await self.push_screen_wait(OverwritePrompt(str(target)))
                if mode not in ("overwrite", "append"):
                    self.notify("Export cancelled.")
                    return
                mode = "write" if mode == "overwrite" else "append"
            try:
                written = write_file(target, plan.content, mode=mode, roots=None, separate=True)
            except Exception as exc:  # the writer's message names the file and the cause
                message = str(exc)
                error = message[:1].upper() + message[1:]
                continue
            break
        resolved = Path(written).resolve()
        self._last_export_dir = resolved.parent
        verb = "Appended" if mode == "append" else "Wrote"
        self.notify(inert_line(f"{verb} ref:{ref_id} to {resolved}"), timeout=6, markup=False)

    def action_toggle_sidebar(self) -> None:
        sidebar = self.sidebar
        sidebar.display = not sidebar.display
        self._keep_focus_visible()

    def action_toggle_forks(self) -> None:
        self.show_forks(not self.fork_panel.display)

    def show_forks(self, show: bool) -> None:
        """On a narrow terminal the fork panel takes the sidebar's place, not the chat's."""
        panel = self.fork_panel
        if panel.display == show:
            return
        panel.display = show
        if show and self.size.width < 150 and self.sidebar.display:
            self.sidebar.display = False
            self._sidebar_hidden_for_forks = True
        elif not show and getattr(self, "_sidebar_hidden_for_forks", False):
            self.sidebar.display = True
            self._sidebar_hidden_for_forks = False
        self._keep_focus_visible()

    # ------------------------------------------------------------- focus

    def _keep_focus_visible(self) -> None:
        """Focus never rests on a hidden or removed widget: it goes back to the input.

        Keys typed into a hidden list are lost without a trace (a ``/remember``
        typed after ctrl+b vanished), so whatever hides a panel calls this.
        """
        focused = self.focused
        if focused is None or not _shown(focused):
            self.chat_input.focus()

    def _tab_stops(self) -> list[Widget]:
        """Tab's ring: the input, then the sidebar's lists and the fork table, when shown.

        The transcript and its tool cards are reached by their own keys (ctrl+↑/↓
        for refs, Page Up/Down), not by walking every card with Tab.
        """
        stops: list[Widget] = [self.chat_input]
        if self.sidebar.display:
            stops += [
                self.sidebar.experience_list.option_list,
                self.sidebar.ref_list.option_list,
            ]
        found = self.query("#forks")
        if found and found.first().display:
            stops.append(self.fork_panel.table)
        return [w for w in stops if _shown(w)]

    def _cycle_focus(self, step: int) -> None:
        if self.screen is not self.screen_stack[0]:
            # A dialog: its own fields, in Textual's order.
            if step > 0:
                self.screen.focus_next()
            else:
                self.screen.focus_previous()
            return
        stops = self._tab_stops()
        focused = self.focused
        at = next((i for i, w in enumerate(stops) if w is focused), None)
        if at is None:  # focus sat somewhere else (a clicked tool card): start over
            target = stops[0] if step > 0 else stops[-1]
        else:
            target = stops[(at + step) % len(stops)]
        target.focus()

    def action_focus_next(self) -> None:
        self._cycle_focus(+1)

    def action_focus_previous(self) -> None:
        self._cycle_focus(-1)

    def on_key(self, event: events.Key) -> None:
        """A printable key that reached the app unhandled belongs in the input.

        It got here because the focused widget (a list, the fork table, a tool
        card, or nothing at all) had no use for it; typing must never vanish.
        """
        if self.screen is not self.screen_stack[0] or not event.is_printable:
            return
        if not event.character or event.key in self.screen.active_bindings:
            return  # a binding of the focused widget or the app took it
        if isinstance(self.focused, (TextArea, Input)):
            return
        event.stop()
        chat_input = self.chat_input
        chat_input.focus()
        chat_input.insert(event.character)

    def action_help(self) -> None:
        from selfref_tui.ui.screens.help import HelpScreen

        keys = [(self._key_label(b.id, b.key), b.description) for b in BINDINGS if b.id]
        keys += INPUT_KEYS
        self.push_screen(HelpScreen(keys, slash.help_rows()))

    def _key_label(self, binding_id: str | None, default: str) -> str:
        return self._keymap.get(binding_id or "", default) if binding_id else default

    def action_show_context(self) -> None:
        if not self._agent_ready():
            return
        from selfref_tui.ui.screens.context_view import ContextView

        plan = self.agent.preview_request(self.key)
        self.push_screen(ContextView(plan.messages, plan.tokens, plan.tools,
                                     estimated=plan.estimated, left_out=plan.left_out))

    def action_new_key(self) -> None:
        # A locked or damaged key is exactly when a fresh one is wanted: only start-up waits.
        if not self.ready:
            self.notify("Still starting up; try again in a moment.", severity="warning")
            return
        if self._refuse_read_only("create keys"):
            return
        self._new_key()

    @work(exclusive=True, group="switch")
    async def _new_key(self) -> None:
        """Ask for the new key's name (a free ``chat-N`` suggested), then open it."""
        from selfref_tui.selfref.keys import validate_key
        from selfref_tui.ui.screens.new_key_prompt import NewKeyPrompt

        existing = {info.key for info in await asyncio.to_thread(self.selfref.keys)}
        existing.add(self.key)
        n = 1
        while f"chat-{n}" in existing:
            n += 1
        name = await self.push_screen_wait(
            NewKeyPrompt(f"chat-{n}", existing=existing, validate=validate_key)
        )
        if name:
            await self.switch_key(name)

    async def _person_keys(self) -> list[dict[str, Any]]:
        """A person's keys, as the switcher and `keys list` show them (forks left out)."""
        keys = [
            {"key": i.key, "messages": i.messages, "updated": i.updated}
            for i in await asyncio.to_thread(self.selfref.keys, forks=False)
        ]
        if self.key not in {k["key"] for k in keys}:
            keys.insert(0, {"key": self.key, "messages": 0, "updated": None})
        return keys

    @work(exclusive=True, group="switch")
    async def action_switch_key(self) -> None:
        if not self._agent_ready() and not self.key_error:
            return
        from selfref_tui.selfref.keys import validate_key
        from selfref_tui.ui.screens.key_switcher import KeySwitcher

        manage = not self.read_only
        chosen = await self.push_screen_wait(
            KeySwitcher(
                await self._person_keys(),
                self.key,
                validate=validate_key,
                rename=self._rename_key if manage else None,
                delete=self._delete_key if manage else None,
            )
        )
        if chosen:
            await self.switch_key(chosen)

    async def _rename_key(self, old: str, new: str) -> list[dict[str, Any]]:
        """The switcher's F2: the key on screen is let go, renamed, and opened again."""
        from selfref_tui.selfref.errors import StoreError

        shown = old == self.key
        if shown:
            if self.router is not None and self.router.busy:
                raise StoreError("A turn is running; press Esc first, then rename.")
            self.agent.release(old)
        try:
            await asyncio.to_thread(self.selfref.rename, old, new)
        except Exception:
            if shown:
                await self.open_key(old)
            raise
        if shown:
            await self.open_key(new)
        return await self._person_keys()

    async def _delete_key(self, key: str) -> list[dict[str, Any]]:
        """The switcher's delete: the key's folder goes to ``<data dir>/trash``."""
        from selfref_tui.selfref.errors import StoreError

        if key == self.key:
            raise StoreError("This key is on screen; switch to another key, then delete it.")
        await asyncio.to_thread(self.selfref.trash, key)
        return await self._person_keys()

    async def switch_key(self, key: str) -> bool:
        if not self.ready:
            self.notify("Still starting up; try again in a moment.", severity="warning")
            return False
        if self.router is not None and self.router.busy:
            self.notify("A turn is running; press Esc first, then switch keys.", severity="warning")
            return False
        from selfref_tui.selfref.errors import StoreError
        from selfref_tui.selfref.keys import validate_key

        try:
            validate_key(key)
        except StoreError as exc:
            self.notify(str(exc), severity="error")
            return False
        if key == self.key and not self.key_error:
            return True
        return await self.open_key(key)

    async def action_quit(self) -> None:
        prompt = self._quit_prompt
        if prompt is not None and self.screen is prompt:
            prompt.dismiss(True)  # the quit key again, on its own question: yes
            return
        if prompt is None and self.chat_input.text.strip():
            self._confirm_quit()
            return
        await self.shutdown_runtime()
        self.exit(0)

    @work(exclusive=True, group="quit")
    async def _confirm_quit(self) -> None:
        """Nothing typed is lost without asking: an unsent draft holds the quit."""
        from selfref_tui.ui.screens.confirm import ConfirmScreen

        quit_key = self._key_label("quit", "ctrl+q").split(",")[0].strip()
        self._quit_prompt = ConfirmScreen(
            "Quit? The message in the input has not been sent and will be lost.",
            title="Unsent message",
            yes_keys=("y", quit_key),
        )
        try:
            quit_now = await self.push_screen_wait(self._quit_prompt)
        finally:
            self._quit_prompt = None
        if quit_now:
            await self.shutdown_runtime()
            self.exit(0)
        else:
            self.chat_input.focus()

    async def shutdown_runtime(self) -> None:
        """Stop the turn (its abort patches are committed), close HTTP, release locks."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.router is not None:
                await self.router.aclose()
            if self.agent is not None:
                await self.agent.aclose()
        finally:
            if self.mcp is not None:
                await self.mcp.aclose()
            if self.demo_server is not None:
                await self.demo_server.stop()
            if self.selfref is not None:
                self.selfref.close()

    async def on_unmount(self) -> None:
        self.gc_pauses.uninstall()
        await self.shutdown_runtime()

    # ------------------------------------------------- garbage collection

    def collect_when_idle(self) -> None:
        """The collector's full pass waits for a quiet moment (see gc_pauses)."""
        if self._gc_timer is not None:
            self._gc_timer.stop()
        self._gc_timer = self.set_timer(QUIET_S, self._idle_collect)

    def _idle_collect(self) -> None:
        self._gc_timer = None
        if self.router is not None and self.router.busy:
            return  # a new turn began: its end asks again
        wait = self.gc_pauses.wait_s()
        if wait > 0:
            self._gc_timer = self.set_timer(wait, self._idle_collect)
            return
        pause = self.gc_pauses.collect()
        self.log(f"full garbage collection between turns: {pause * 1000:.0f} ms")

    @on(TextArea.Changed)
    def _typed(self) -> None:
        self.gc_pauses.key_pressed()

    # ------------------------------------------------------- trust boundary

    def secret_free(self, text: str) -> str:
        """``text`` without the configured key, bearer tokens or URL userinfo."""
        return redact(text, [self.config.provider.api_key])

    def notify(  # type: ignore[override]
        self,
        message: str,
        *,
        title: str = "",
        severity: Any = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Every notification is plain, inert, secret-free text: never markup.

        Notifications quote servers, stores and paths; Textual would parse
        ``[@click=app.quit]`` in them as an action a click runs. ``markup`` is
        accepted for Textual's signature and ignored.
        """
        super().notify(
            inert(self.secret_free(str(message))),
            title=inert_line(self.secret_free(str(title))),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

    def open_url(self, url: str, *, new_tab: bool = True) -> None:
        """A clicked link (an answer's Markdown) opens only as a web page, never anything else."""
        if url.lower().startswith(("http://", "https://")):
            super().open_url(url, new_tab=new_tab)
        else:
            self.notify(f"Not opened: {inert_line(url, 80)} is not a web link.", timeout=4)

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
        for usage, help_text in slash.help_rows():
            if " " not in usage:
                yield SystemCommand(usage, help_text, _command(self, usage))


def _shown(widget: Widget) -> bool:
    """Attached and displayed, with every container above it displayed too."""
    if not widget.is_attached:
        return False
    node: Any = widget
    while node is not None and not isinstance(node, Screen):
        if not node.display:
            return False
        node = node.parent
    return True


def _action(app: SelfRefApp, action: str):
    return lambda: app.run_action(action)


def _command(app: SelfRefApp, text: str):
    return lambda: app.run_worker(app.run_command(text))


def _preload_runtime() -> None:
    import selfref_tui.agent.loop
    import selfref_tui.agent.provider  # noqa: F401


def run_app(config: AppConfig, *, read_only: bool = False) -> int:
    """What ``selfref-tui`` with no sub-command runs."""
    app = SelfRefApp(config, read_only=read_only)
    result = app.run()
    return int(result or 0)
