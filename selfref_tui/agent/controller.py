"""The chat controller: the agent, the input router and the memory key's lifecycle.

What a front end does with a person's input — start the runtime, open a key,
switch to another, let one go, keep what was typed before the runtime was
ready, refuse what a read-only window or an unavailable key cannot do — has
nothing to do with how it is drawn. It lives here, without a Textual import,
so it is tested without a screen (real store files, the in-package server
over HTTP) and the app only shows what it returns.

Refusals are :class:`Refused` exceptions whose message is the one line the
person reads; the app shows it as a notification. Everything slow (the store,
imports) runs in a thread, so a caller on the UI's loop is never held up.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from selfref_tui.config import AppConfig, ProviderConfig

if TYPE_CHECKING:  # the runtime's imports are heavy: they wait for start_runtime()
    from selfref_tui.agent.events import AgentEvent, Notice
    from selfref_tui.agent.loop import Agent
    from selfref_tui.agent.mcp.manager import McpManager
    from selfref_tui.agent.protocols import MemoryLike
    from selfref_tui.agent.router import AgentInputRouter
    from selfref_tui.demo.server import DemoServer
    from selfref_tui.selfref.reference import ReadOnlyReference, SelfReference

#: how long the start-up check waits for the provider before calling it not answering
PROVIDER_CHECK_S = 5.0

STARTING = "Still starting up; try again in a moment."

Severity = Literal["information", "warning", "error"]

T = TypeVar("T")


class Refused(Exception):
    """The controller will not do this now; ``str(exc)`` says why and what to do."""

    def __init__(self, message: str, severity: Severity = "warning") -> None:
        super().__init__(message)
        self.severity: Severity = severity


class KeyOpenError(Refused):
    """A memory key cannot be opened (locked, unsupported, unreadable)."""

    def __init__(self, message: str, *, expected: bool) -> None:
        super().__init__(message, "error")
        #: a store error the store explained (locked…), as opposed to a bug or an OS error
        self.expected = expected


@dataclass
class OpenedKey:
    """A key the controller has just opened: what the app shows of it."""

    key: str
    memory: MemoryLike
    #: the store moved a damaged log aside (kept for recovery): what it said, or ""
    salvaged: str = ""
    #: damaged records skipped, a torn write repaired…
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SidebarLists:
    """The sidebar's two lists for the key on screen."""

    experiences: list[dict]
    #: every occurrence of every ref, oldest first; ``superseded`` when a later one replaced it
    refs: list[dict]


class ChatController:
    """One window's runtime: the agent, its router, the key on screen and its lifecycle."""

    def __init__(self, config: AppConfig, *, read_only: bool = False) -> None:
        self.config = config
        #: --read-only: keys are opened without their lock; anything that writes is refused
        self.read_only = read_only
        #: the key on screen (the router's key once the runtime runs)
        self.key = config.key
        self.agent: Agent | None = None
        self.router: AgentInputRouter | None = None
        self.selfref: SelfReference | ReadOnlyReference | None = None
        self.demo_server: DemoServer | None = None
        #: the MCP servers' manager, started with the runtime
        self.mcp: McpManager | None = None
        #: the demo server's provider, once it runs
        self._demo_provider: ProviderConfig | None = None
        #: the runtime runs (the key may still be opening)
        self.ready = False
        #: why the current key cannot take input (locked, corrupt…); None when it can
        self.key_error: str | None = None
        self._early: list[str] = []
        self._closed = False
        #: store work running in threads; aclose() waits for it before the store closes
        self._store_threads: set[asyncio.Future[Any]] = set()

    # ------------------------------------------------------------ start-up

    def choose_demo(self) -> None:
        """The welcome screen's "try the demo": the offline demo model, not a provider."""
        self.config = replace(
            self.config, provider=replace(self.config.provider, demo=True), unconfigured=False
        )

    @property
    def provider(self) -> ProviderConfig:
        """The provider the agent talks to: the config's, or the demo server's once it runs."""
        return self._demo_provider or self.config.provider

    async def start_server(self) -> None:
        """The demo server, when the config asks for it (paced like a real model)."""
        if not self.config.provider.demo:
            return
        from selfref_tui.demo import demo_provider, demo_server

        self.demo_server = demo_server()
        self._demo_provider = demo_provider(await self.demo_server.start())

    @staticmethod
    async def load_runtime() -> None:
        """openai takes ~0.5 s to import: do it in a thread, off the caller's loop."""
        await asyncio.to_thread(_preload_runtime)

    def start_runtime(self, emit: Callable[[AgentEvent], None]) -> None:
        """Store, provider, agent, router and MCP servers; events go to ``emit``."""
        from selfref_tui.agent.loop import Agent
        from selfref_tui.agent.provider import Provider
        from selfref_tui.agent.router import AgentInputRouter
        from selfref_tui.agent.window import ASSUMED_WINDOW
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
        if not self.config.mcp_servers or self.agent is None:
            return
        from selfref_tui.agent.mcp.manager import McpManager

        path = self.config.config_path

        def save_trust(server: str, tool: str) -> None:
            if path is not None:
                from selfref_tui.agent.mcp.trust import add_trust

                add_trust(path, server, tool)

        # A notice concerns whichever key is shown, not the one open when it started.
        self.mcp = McpManager(
            self.config.mcp_servers, lambda e: emit(replace(e, key=self.key)), on_trust=save_trust
        )
        self.agent.tool_sources.append(self.mcp)
        self.mcp.start()

    async def learn_window(self) -> Notice | None:
        """Ask the server for the model's window (agent/window.py); a notice when assumed."""
        from selfref_tui.agent.events import Notice
        from selfref_tui.agent.window import CACHE_FILE, WindowCache, resolve_window

        data_dir = self.config.data_dir
        window = await resolve_window(
            self.provider, WindowCache(data_dir / CACHE_FILE if data_dir else None)
        )
        if self.agent is None:
            return None
        self.agent.context_window = window.tokens
        note = window.notice()
        return Notice(key=self.key, message=note, severity="warning") if note else None

    async def provider_note(self) -> str | None:
        """One quick request, so "ready" never hides a server that is down.

        The header's note: "" when the server answered, None when there is
        nothing to say either way (a server that does not list models is fine).
        """
        from selfref_tui.agent.provider import ProviderError

        if self.agent is None:
            return None
        try:
            await asyncio.wait_for(self.agent.provider.list_models(), PROVIDER_CHECK_S)
        except TimeoutError:
            return "provider not answering"
        except ProviderError as exc:
            return {"connection": "provider unreachable", "timeout": "provider not answering",
                    "auth": "API key refused"}.get(exc.kind, "")
        except Exception:
            return None
        return ""

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

    # ------------------------------------------------------------ the key

    async def open_key(self, key: str) -> OpenedKey:
        """Open ``key`` and make it the one on screen; the previous key is let go.

        Raises :class:`KeyOpenError` (and remembers why in ``key_error``) when it
        cannot be opened; the previous key is then kept, and input is refused
        until a key opens.
        """
        from selfref_tui.selfref.errors import CorruptStoreError, StoreError

        agent = self._agent()
        salvaged = ""
        try:
            try:
                memory = await self._in_thread(agent.memory, key)
            except CorruptStoreError as exc:
                # The store moved the damaged log aside (kept for recovery): carry on
                # with the key as it now stands, and say so.
                salvaged = str(exc)
                memory = await self._in_thread(agent.memory, key)
        except StoreError as exc:
            self.key_error = str(exc)
            raise KeyOpenError(str(exc), expected=True) from exc
        except Exception as exc:
            self.key_error = f"Cannot open memory key {key!r}: {exc}"
            raise KeyOpenError(self.key_error, expected=False) from exc
        self.key_error = None
        warnings = list(memory.take_warnings())
        if not self.read_only:
            # A key opened here is listed (switcher, `keys list`) before its first message.
            await self._in_thread(self._store().create, key)
        previous, self.key = self.key, key
        if previous != key:
            agent.release(previous)  # another window may write it now
        if self.router is not None:
            self.router.key = key
        return OpenedKey(key, memory, salvaged, warnings)

    def check_switch(self, key: str) -> bool:
        """Whether opening ``key`` is needed (False: it is already on screen and fine).

        Raises :class:`Refused` while starting up, during a turn, or for a name
        that is not a valid key.
        """
        from selfref_tui.selfref.errors import StoreError
        from selfref_tui.selfref.keys import validate_key

        if not self.ready:
            raise Refused(STARTING)
        if self.busy:
            raise Refused("A turn is running; press Esc first, then switch keys.")
        try:
            validate_key(key)
        except StoreError as exc:
            raise Refused(str(exc), "error") from exc
        return key != self.key or bool(self.key_error)

    async def person_keys(self) -> list[dict[str, Any]]:
        """A person's keys, as the switcher and `keys list` show them (forks left out)."""
        keys = [
            {"key": i.key, "messages": i.messages, "updated": i.updated}
            for i in await self._in_thread(self._store().keys, forks=False)
        ]
        if self.key not in {k["key"] for k in keys}:
            keys.insert(0, {"key": self.key, "messages": 0, "updated": None})
        return keys

    async def new_key_names(self) -> tuple[str, set[str]]:
        """A free ``chat-N`` to suggest for a new key, and the names already taken."""
        self.check_writable("create keys")
        existing = {info.key for info in await self._in_thread(self._store().keys)}
        existing.add(self.key)
        n = 1
        while f"chat-{n}" in existing:
            n += 1
        return f"chat-{n}", existing

    async def rename_key(self, old: str, new: str) -> None:
        """Rename ``old`` (its folder copied under the new name, the old one trashed).

        The key on screen is let go first; the caller opens it again, under
        whichever name it then has. Store errors say what to do.
        """
        from selfref_tui.selfref.errors import StoreError

        if old == self.key:
            if self.busy:
                raise StoreError("A turn is running; press Esc first, then rename.")
            self._agent().release(old)
        await self._in_thread(self._store().rename, old, new)

    async def delete_key(self, key: str) -> None:
        """Move ``key``'s folder (and its forks') to ``<data dir>/trash``."""
        from selfref_tui.selfref.errors import StoreError

        if key == self.key:
            raise StoreError("This key is on screen; switch to another key, then delete it.")
        await self._in_thread(self._store().trash, key)

    # ------------------------------------------------------------- input

    @property
    def busy(self) -> bool:
        return self.router is not None and self.router.busy

    def check_ready(self) -> None:
        """Refuse (:class:`Refused`) until the runtime runs and the key is open."""
        if not self.ready:
            raise Refused(STARTING)
        if self.key_error:
            raise Refused(self.key_error, "error")

    def check_writable(self, what: str) -> None:
        """Refuse ``what`` in a read-only window (it would write the store)."""
        if self.read_only:
            raise Refused(
                f"Read-only window (--read-only): it cannot {what}. Quit, and start "
                "selfref-tui without --read-only once no other window writes this key."
            )

    def submit(self, text: str, images: Sequence[str] = ()) -> Literal["early", "started",
                                                                          "queued"]:
        """Send a message: a new turn, or queued into the running one.

        Before the runtime is ready it is kept (``"early"``) and goes out, in
        order, when :meth:`take_early_inputs` is called once the key is open.
        ``images`` (``data:`` URLs) go with it; a message with images is not
        kept early (refused: it stays in the input until the key is open).
        """
        if not self.ready:
            if images:
                raise Refused("Still starting up; your message and its images stay in the "
                              "input — send them in a moment.")
            self._early.append(text)
            return "early"
        self.check_ready()
        self.check_writable("send messages")
        return self._router().submit(text, images)  # type: ignore[return-value]

    @property
    def early_inputs(self) -> list[str]:
        """Messages typed before the runtime was ready, not sent yet."""
        return list(self._early)

    def take_early_inputs(self) -> list[str]:
        """The early messages, once: the caller sends them (:meth:`submit`) and shows them."""
        early, self._early = self._early, []
        return early

    def compact(self) -> str:
        """``/compact``: ``"started"`` (a compaction turn) or ``"queued"`` (at the next step);
        :class:`Refused` when the window is too small to offer the ``compact`` tool."""
        self.check_ready()
        self.check_writable("/compact")
        outcome = self._router().request_compaction()
        if outcome == "refused":
            from selfref_tui.agent.tool_offer import COMPACT_REFUSED

            raise Refused(f"{COMPACT_REFUSED[0].upper()}{COMPACT_REFUSED[1:]}; set "
                          "context_window if the model has a larger window.")
        return outcome

    def retry(self) -> str:
        """Send the failed last message again: ``"started"``, ``"busy"`` or ``"nothing"``."""
        self.check_ready()
        return self._router().retry()

    def abort(self) -> bool:
        """Stop the running turn (its partial answer is kept); False when none runs."""
        return self.router is not None and self.router.abort()

    def answer(self, question_id: str, choice: str) -> None:
        """A tool's question answered by the person."""
        if self.router is not None:
            self.router.answer(question_id, choice)

    def remember(self, text: str) -> str:
        """The person adds an experience; its id."""
        self.check_ready()
        self.check_writable("/remember")
        return self._agent().remember_experience(self.key, text)

    def forget(self, exp_id: str) -> bool:
        """The person removes an experience; False when there is none by that id."""
        self.check_ready()
        self.check_writable("forget experiences")
        return self._agent().forget_experience(self.key, exp_id)

    # ----------------------------------------------------------- reading

    def preview(self) -> Any:
        """Exactly what the next request of the key on screen carries (``RequestPlan``)."""
        self.check_ready()
        return self._agent().preview_request(self.key)

    async def usage(self) -> tuple[str, int, int, bool] | None:
        """(key, tokens, window, estimated) of the next call, counted in a thread."""
        if self.agent is None or self.key_error:
            return None
        key, agent = self.key, self.agent
        try:
            plan = await self._in_thread(agent.preview_request, key)
        except Exception:
            return None
        return key, plan.tokens, agent.context_window, plan.estimated

    def sidebar_lists(self, memory: MemoryLike | None = None) -> SidebarLists | None:
        """The key's experiences and refs; None while no key is open."""
        if memory is None:
            if self.agent is None or self.key_error:
                return None
            try:
                memory = self.agent.memory(self.key)
            except Exception:
                return None
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
        return SidebarLists(list(memory.experiences), rows)

    def ref_content(self, ref_id: str) -> str | None:
        """The latest content of ``ref:ID`` in the key on screen; None when there is none."""
        self.check_ready()
        occurrences = self._agent().memory(self.key).refs.get(ref_id.removeprefix("ref:"))
        return occurrences[-1].get("content", "") if occurrences else None

    # ----------------------------------------------------------- closing

    async def aclose(self) -> None:
        """Stop the turn (its abort patches are committed), close HTTP, release locks.

        Store work still running in a thread is waited for before the store
        closes: the app cancels its workers at shutdown, but a cancelled
        ``to_thread`` keeps running, and a token count that opened the key after
        the close kept its lock, so the next window on the key was refused.
        """
        if self._closed:
            return
        self._closed = True
        try:
            if self.router is not None:
                await self.router.aclose()
            if self.agent is not None:
                await self.agent.aclose()
        finally:
            try:
                if self.mcp is not None:
                    await self.mcp.aclose()
                if self.demo_server is not None:
                    await self.demo_server.stop()
                await asyncio.gather(*self._store_threads, return_exceptions=True)
            finally:
                if self.selfref is not None:
                    self.selfref.close()

    # ---------------------------------------------------------- internals

    async def _in_thread(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn`` (store work) in a thread that :meth:`aclose` waits for.

        Cancelling the caller does not stop the thread (nothing can), so the
        thread is shielded and tracked instead of left to finish after the
        store closed. Refused once closing: no store work starts after that.
        """
        if self._closed:
            raise Refused("This window is closing.")
        future = asyncio.ensure_future(asyncio.to_thread(fn, *args, **kwargs))
        self._store_threads.add(future)
        future.add_done_callback(self._store_threads.discard)
        return await asyncio.shield(future)

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


def typed_inputs(history: Sequence[dict]) -> list[str]:
    """What the person typed in ``history``, oldest first (Up recalls it).

    Summaries and the runtime's own notes are user messages too, but nobody
    typed them.
    """
    return [
        m["content"]
        for m in history
        if m.get("role") == "user"
        and isinstance(m.get("content"), str)
        and m.get("compaction") is None
        and not m.get("runtime_note")
    ]


def _preload_runtime() -> None:
    import selfref_tui.agent.loop
    import selfref_tui.agent.provider  # noqa: F401


__all__ = [
    "ChatController",
    "KeyOpenError",
    "OpenedKey",
    "Refused",
    "SidebarLists",
    "typed_inputs",
]

