"""Start-up after the first frame, and what follows the provider: mixed into the app.

``compose`` builds the whole screen from the config alone; ``boot`` (scheduled
by ``on_mount`` once that frame is drawn, or by the welcome screen's "demo")
then mounts the fork panel and find bar, starts the demo server and the
runtime (openai is a heavy import, done in a thread), opens the memory key and
sends what was typed meanwhile. The model's window, the provider's health and
the token meter's exact counts are asked in the background, here and whenever
the provider changes, so none of them holds a frame or a key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual import work

if TYPE_CHECKING:
    from selfref_tui.agent.chat.controller import ChatController
    from selfref_tui.agent.events import AgentEvent
    from selfref_tui.ui.widgets.app_header import AppHeader
    from selfref_tui.ui.widgets.sidebar import Sidebar
    from selfref_tui.ui.widgets.transcript import Transcript


class BootActions:
    """The runtime started, the key opened, the provider's figures learnt."""

    if TYPE_CHECKING:  # what the app provides
        controller: ChatController
        key: str
        header: AppHeader
        sidebar: Sidebar
        transcript: Transcript

        def query(self, selector: str) -> Any: ...
        def query_one(self, selector: str) -> Any: ...
        def exit(self, result: Any = None) -> None: ...
        def emit(self, event: AgentEvent) -> None: ...
        def secret_free(self, text: str) -> str: ...
        def _model_name(self) -> str: ...
        def _new_fork_panel(self) -> Any: ...
        async def mount_find_bar(self) -> Any: ...
        async def open_key(self, key: str) -> Any: ...
        async def _send_early_inputs(self) -> None: ...

    def _welcome_done(self, choice: str | None) -> None:
        if choice == "demo":
            self.controller.choose_demo()
            self.header.model, self.header.demo = self._model_name(), True
            self.boot()
        else:
            self.exit(0)

    @work(exclusive=True, group="boot")
    async def boot(self) -> None:
        """Everything slow, after the first frame: demo server, runtime import, store."""
        controller = self.controller
        if not self.query("#forks"):
            await self.query_one("#conversation").mount(self._new_fork_panel())
        await self.mount_find_bar()
        await self.sidebar.parts_mounted.wait()  # what the key's opening fills
        try:
            if self.sidebar.parts_error is not None:
                raise RuntimeError(f"the side panel failed: {self.sidebar.parts_error}")
            await controller.start_server()
            await self.load_runtime()
            controller.start_runtime(self.emit)
        except Exception as exc:  # never crash the first frame; say what failed
            self.header.status = "not ready"
            said = self.secret_free(f"Could not start: {exc}")
            if self.sidebar.parts_error is None:  # else there is no meter to say it
                self.sidebar.meter.show_unavailable(said, "the app did not start")
            await self.transcript.add_error(said)
            return
        if not controller.provider.context_window:
            self.learn_window()
        if not controller.provider.demo:
            self._check_provider()
        from selfref_tui.agent.chat.controller import Refused

        try:
            await self.open_key(await controller.resume_key())
        except Refused:
            if not controller.closed:
                raise
        if controller.closed:  # quit while the key opened: nothing more to start
            return
        self._load_token_encoder()
        await self._send_early_inputs()

    async def load_runtime(self) -> None:
        """openai takes ~0.5 s to import: in a thread, so keys stay live (tests gate it)."""
        await self.controller.load_runtime()

    def provider_switched(self) -> None:
        """The key on screen runs on another endpoint or model (/model, /profile, or the
        one it chose before): the header says which, and its window is learnt again."""
        provider = self.controller.provider
        self.header.provider, self.header.model = provider.name, provider.model
        self.header.demo = provider.demo
        self.header.provider_note = ""
        if not provider.context_window:
            self.learn_window()
        if not provider.demo:
            self._check_provider()
        self._refresh_usage()

    @work(exclusive=True, group="window", exit_on_error=False)
    async def learn_window(self) -> None:
        """Ask the server for the model's window, in the background (agent/provider/window.py)."""
        notices = await self.controller.learn_window()
        self._refresh_usage()
        for notice in notices:
            self.emit(notice)

    @work(exclusive=True, group="provider-check", exit_on_error=False)
    async def _check_provider(self) -> None:
        """A server that is down is named in the header, off the first frame's path."""
        note = await self.controller.provider_note()
        if note is not None:
            self.header.provider_note = note

    @work(exclusive=True, group="encoder", exit_on_error=False)
    async def _load_token_encoder(self) -> None:
        """Exact token counts once tiktoken's encoding has loaded: the meter counts again."""
        await self.controller.load_token_encoder()
        self._refresh_usage()

    @work(exclusive=True, group="usage")
    async def _refresh_usage(self) -> None:
        """Token count of the next call, computed off the loop (it may encode a lot)."""
        from textual.css.query import NoMatches

        from selfref_tui.agent.chat.controller import Refused

        key = self.key
        try:
            usage = await self.controller.usage()
        except Refused as exc:  # the count failed: said, not "counting…" for good
            usage, failed = None, str(exc)
        else:
            failed = ""
        if key != self.key or (usage is not None and usage[0] != self.key):
            return  # another key is on screen by now: its own count follows
        try:
            meter = self.sidebar.meter
        except NoMatches:  # the app closed while it counted
            return
        if usage is not None:
            meter.show_usage(*usage[1:])
        elif failed:
            meter.show_unavailable(self.secret_free(failed), "the count failed")
        elif self.controller.key_error:  # the key on screen did not open
            meter.show_unavailable(self.controller.key_error)
