"""What the runtime needs from the store and the provider, as Protocols.

The loop used to type these as ``Any``; naming the few members it really uses
keeps the seams visible (a test double, a remote store or another provider
only has to offer these) and lets a type checker catch a renamed method.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..context.mutations import ContextMutation

if TYPE_CHECKING:
    from ..selfref.key_settings import KeySettings


class MemoryLike(Protocol):
    """One loaded memory key (``selfref.store.MemoryKey`` provides it)."""

    key: str
    refs: dict[str, list[dict]]
    fds: dict[str, dict]
    forks: dict[str, dict]
    summary: dict[str, Any] | None

    @property
    def messages(self) -> list[dict[str, Any]]: ...

    @property
    def history(self) -> list[dict[str, Any]]: ...

    @property
    def history_length(self) -> int: ...

    @property
    def experiences(self) -> list[dict[str, Any]]: ...

    @property
    def settings(self) -> KeySettings: ...

    def save_settings(self, settings: KeySettings) -> None: ...

    @property
    def last_number(self) -> int: ...

    def entry(self, n: int) -> Any: ...

    def entries(self) -> Sequence[Any]: ...

    def history_numbers(self) -> list[int]: ...

    def commit(
        self, mutations: Sequence[ContextMutation] = (), *, records: Sequence[dict] = ()
    ) -> None: ...

    def take_warnings(self) -> list[str]: ...


class StoreLike(Protocol):
    """All memory keys (``selfref.reference.SelfReference`` provides it)."""

    def open(self, key: str, *, write: bool = True) -> MemoryLike: ...

    def open_keys(self) -> list[str]: ...

    def release(self, key: str) -> None: ...


#: ``on_retry(attempt, delay_s, reason)``: reason is short, e.g. "rate limited (429)"
RetryFn = Callable[[int, float, str], None]
#: ``on_notice(message, severity)``: something the person should know, not an error
NoticeFn = Callable[[str, str], None]


class ProviderLike(Protocol):
    """One endpoint and model (``agent.provider.client.Provider`` provides it)."""

    def stream(
        self, messages: list[dict], tools: list[dict] | None = None, *,
        on_retry: RetryFn | None = None,
        on_notice: NoticeFn | None = None,
    ) -> AsyncIterator[Any]: ...

    async def aclose(self) -> None: ...
