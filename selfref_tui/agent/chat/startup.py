"""A window's start-up: the runtime it builds after the first frame, and its closing.

The config chooses a provider (or the demo server, started here); the
runtime's imports load in a thread; then the store, the provider, the agent,
the input router and the MCP servers are built, in that order, and the
model's window and the token encoder are learnt in the background. What is
built here is closed here (:meth:`Startup.aclose`), store work still in a
thread first.

A mixin of :class:`~selfref_tui.agent.chat.controller.ChatController`: the key on
screen (``key``) belongs to :mod:`~selfref_tui.agent.chat.key_lifecycle`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from selfref_tui.config import AppConfig, McpServerConfig, ProviderConfig

from .refusals import STARTING, Refused

if TYPE_CHECKING:  # the runtime's imports are heavy: they wait for start_runtime()
    from selfref_tui.agent.events import AgentEvent, Notice
    from selfref_tui.agent.mcp.manager import McpManager
    from selfref_tui.agent.turn.loop import Agent
    from selfref_tui.agent.turn.router import AgentInputRouter
    from selfref_tui.demo.server import DemoServer
    from selfref_tui.selfref.reference import ReadOnlyReference, SelfReference

#: how long the start-up check waits for the provider before calling it not answering
PROVIDER_CHECK_S = 5.0

T = TypeVar("T")


class Startup:
    """The runtime of one window: built after its first frame, closed once."""

    if TYPE_CHECKING:
        key: str  # the key on screen (KeyLifecycle)

    def __init__(self, config: AppConfig, *, read_only: bool = False) -> None:
        self.config = config
        #: --read-only: keys are opened without their lock; anything that writes is refused
        self.read_only = read_only
        self.agent: Agent | None = None
        self.router: AgentInputRouter | None = None
        self.selfref: SelfReference | ReadOnlyReference | None = None
        self.demo_server: DemoServer | None = None
        #: the MCP servers' manager, started with the runtime
        self.mcp: McpManager | None = None
        #: where the MCP manager's events go, once the runtime runs (one made later)
        self._mcp_emit: Callable[[AgentEvent], None] | None = None
        #: the demo server's provider, once it runs
        self._demo_provider: ProviderConfig | None = None
        #: the provider the key on screen chose (/model, /profile); None: the window's
        self._chosen: ProviderConfig | None = None
        #: the runtime runs (the key may still be opening)
        self.ready = False
        self._closed = False
        self._closing: asyncio.Future[None] | None = None
        #: store work running in threads; aclose() waits for it before the store closes
        self._store_threads: set[asyncio.Future[Any]] = set()

    # ------------------------------------------------------------ provider

    def choose_demo(self) -> None:
        """The welcome screen's "try the demo": the offline demo model, not a provider."""
        self.config = replace(
            self.config, provider=replace(self.config.provider, demo=True), unconfigured=False
        )

    @property
    def provider(self) -> ProviderConfig:
        """The provider the agent talks to: the one the key on screen chose, else the
        config's, or the demo server's once it runs."""
        return self._chosen or self._demo_provider or self.config.provider

    async def start_server(self) -> None:
        """The demo server, when the config asks for it (paced like a real model)."""
        if not self.config.provider.demo:
            return
        from selfref_tui.demo import demo_provider, demo_server

        self.demo_server = demo_server()
        self._demo_provider = demo_provider(await self.demo_server.start())

    # ------------------------------------------------------------- runtime

    @staticmethod
    async def load_runtime() -> None:
        """openai takes ~0.5 s to import and the TLS context 70-140 ms to build: both in a
        thread, off the caller's loop."""
        await asyncio.to_thread(_preload_runtime)

    def start_runtime(self, emit: Callable[[AgentEvent], None]) -> None:
        """Store, provider, agent, router and MCP servers; events go to ``emit``."""
        from selfref_tui.agent.provider.client import Provider
        from selfref_tui.agent.provider.window import ASSUMED_WINDOW
        from selfref_tui.agent.turn.loop import Agent
        from selfref_tui.agent.turn.router import AgentInputRouter
        from selfref_tui.selfref.reference import ReadOnlyReference, SelfReference

        selfref: SelfReference | ReadOnlyReference = SelfReference(
            self.config.data_dir, source=self.config.data_dir_source
        )
        if self.read_only:
            selfref = ReadOnlyReference(selfref)
        self.selfref = selfref
        provider = self.provider
        self.agent = Agent(
            selfref,
            Provider(provider),
            self.config.agent,
            emit,
            model=provider.model,
            context_window=provider.context_window or ASSUMED_WINDOW,
        )
        self.agent.interactive = True  # tools may ask the person (QuestionAsked)
        self.router = AgentInputRouter(self.agent, self.key)
        self._start_mcp(emit)
        self.ready = True

    async def start(self, emit: Callable[[AgentEvent], None]) -> None:
        """All of start-up but opening the key: server, imports, runtime."""
        await self.start_server()
        await self.load_runtime()
        self.start_runtime(emit)

    def _start_mcp(self, emit: Callable[[AgentEvent], None]) -> None:
        """MCP servers start in the background; their tools join as each is ready."""
        self._mcp_emit = emit
        if not self.config.mcp_servers or self.agent is None:
            return
        self._make_mcp(self.config.mcp_servers, emit).start()

    def mcp_from_file(self) -> McpManager | None:
        """The MCP manager, made (with no servers yet) if the app started without one:
        ``/mcp restart NAME`` or ``/mcp reload`` starts a table added to config.toml
        since. None before the runtime runs, or with no config file to read."""
        if self.mcp is None and self.agent is not None and self.config.config_path is not None \
                and self._mcp_emit is not None:
            self._make_mcp((), self._mcp_emit).start()
        return self.mcp

    def _make_mcp(self, servers: Sequence[McpServerConfig],
                  emit: Callable[[AgentEvent], None]) -> McpManager:
        from selfref_tui.agent.mcp.manager import McpManager

        path = self.config.config_path

        def save_trust(server: str, tool: str) -> None:
            if path is not None:
                from selfref_tui.agent.mcp.trust import add_trust

                add_trust(path, server, tool)

        # A notice concerns whichever key is shown, not the one open when it started.
        mcp = self.mcp = McpManager(
            servers, lambda e: emit(replace(e, key=self.key)), on_trust=save_trust
        )
        mcp.restart_hint = "/mcp restart {server}, or r on the /mcp screen"
        mcp.config_path = path  # a restart reads the server's table again
        if self.agent is not None:  # (both callers made sure)
            self.agent.tool_sources.append(mcp)
        return mcp

    @property
    def busy(self) -> bool:
        """A turn is running."""
        return self.router is not None and self.router.busy

    # ------------------------------------------- learnt after the first frame

    async def learn_window(self) -> list[Notice]:
        """Ask the server for the model's window (provider/window.py); notices when assumed
        or when something on the way was not believed."""
        from selfref_tui.agent.events import Notice
        from selfref_tui.agent.provider.window import CACHE_FILE, WindowCache, resolve_window

        data_dir = self.config.data_dir
        window = await resolve_window(
            self.provider, WindowCache(data_dir / CACHE_FILE if data_dir else None)
        )
        if self.agent is None:
            return []
        self.agent.context_window = window.tokens
        return [Notice(key=self.key, message=line, severity="warning")
                for line in window.notices()]

    async def provider_note(self) -> str | None:
        """One quick request, so "ready" never hides a server that is down.

        The header's note: "" when the server answered, None when there is
        nothing to say either way. Only the status is read, never the body: a
        server whose model list never ends must not fill the memory.
        """
        from selfref_tui.agent.provider.probe import status_of

        if self.agent is None:
            return None
        try:
            status = await status_of(self.provider, PROVIDER_CHECK_S)
        except Exception:
            return None
        if status in (401, 403):
            return "API key refused"
        return {"connection": "provider unreachable",
                "timeout": "provider not answering"}.get(str(status), "")

    async def load_token_encoder(self) -> None:
        """Exact token counts from the start, not only after the first turn.

        Until tiktoken's encoding is loaded the runtime estimates (chars/4), so
        a restart showed 606 where the same history had read 567 before. The
        encoding loads in a thread once the key is open; a failure (offline data
        missing) leaves the estimates.
        """
        if self.agent is None:
            return
        tokens = self.agent.tokens
        if tokens.ready:
            return
        from selfref_tui.selfref.encodings import load_encoder

        try:
            encode = await asyncio.to_thread(load_encoder, self.agent.model or "gpt-4o-mini")
        except Exception:
            return
        if not tokens.ready:
            tokens.set_encoder(encode)

    # ------------------------------------------------------------- closing

    @property
    def closed(self) -> bool:
        """Whether closing began (:meth:`aclose`): no store work starts any more."""
        return self._closed

    async def aclose(self) -> None:
        """Stop the turn (its abort patches are committed), close HTTP, release locks.

        Store work still running in a thread is waited for before the store
        closes: the app cancels its workers at shutdown, but a cancelled
        ``to_thread`` keeps running, and a token count that opened the key after
        the close kept its lock, so the next window on the key was refused.
        """
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._aclose())
        # a second caller (the app's unmount while a signal's quit closes) waits for the
        # first close to end: returning at once let the process end before it had
        await asyncio.shield(self._closing)

    async def _aclose(self) -> None:
        self._closed = True
        try:
            if self.router is not None:
                await self.router.aclose()
            if self.agent is not None:
                await self.agent.aclose()
        finally:
            try:
                if self.mcp is not None:
                    await self.mcp.aclose(quitting=True)
                if self.demo_server is not None:
                    await self.demo_server.stop()
                await asyncio.gather(*self._store_threads, return_exceptions=True)
            finally:
                if self.selfref is not None:
                    self.selfref.close()

    async def _in_thread(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn`` (store work) in a thread that :meth:`aclose` waits for.

        Cancelling the caller does not stop the thread (nothing can), so the
        thread is shielded and tracked instead of left to finish after the
        store closed. Refused once closing: no store work starts after that.
        """
        return await asyncio.shield(self._thread(fn, *args, **kwargs))

    def _thread(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> asyncio.Future[T]:
        """``fn`` started in a tracked thread (:meth:`_in_thread`); its future, to await
        shielded (or to wait for elsewhere: letting a key go waits for its counts)."""
        if self._closed:
            raise Refused("This window is closing.")
        future = asyncio.ensure_future(asyncio.to_thread(fn, *args, **kwargs))
        self._store_threads.add(future)
        future.add_done_callback(self._store_threads.discard)
        return future

    # ------------------------------------------------- refused until started

    def _agent(self) -> Agent:
        if self.agent is None:
            raise Refused(STARTING)
        return self.agent

    def _store(self) -> SelfReference | ReadOnlyReference:
        if self.selfref is None:
            raise Refused(STARTING)
        return self.selfref

    def _router(self) -> AgentInputRouter:
        if self.router is None:
            raise Refused(STARTING)
        return self.router


def _preload_runtime() -> None:
    import selfref_tui.agent.provider.client
    import selfref_tui.agent.turn.loop  # noqa: F401
    from selfref_tui.agent.provider.tls import tls_context

    tls_context()  # the CA bundle read here, not by the Provider built on the app's loop


__all__ = ["PROVIDER_CHECK_S", "Startup"]
