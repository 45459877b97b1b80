"""What a window refuses to do now, said in the one line the person reads.

The controller and its parts raise these; a front end shows ``str(exc)`` (the
app as a notification) and never has to word a refusal itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from selfref_tui.config import ProviderConfig

#: said for anything asked before the runtime runs
STARTING = "Still starting up; try again in a moment."

Severity = Literal["information", "warning", "error"]


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


class NotRemembered(Refused):
    """A switch of model or profile that took effect but could not be saved: a turn
    already runs on ``provider``, so the window keeps it (the front end shows it) and
    the message says the next start will not."""

    def __init__(self, message: str, provider: ProviderConfig) -> None:
        super().__init__(message, "error")
        self.provider = provider


__all__ = ["STARTING", "KeyOpenError", "NotRemembered", "Refused", "Severity"]
