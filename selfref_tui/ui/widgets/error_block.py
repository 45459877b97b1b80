"""An error the person should read, inline where it happened."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from selfref_tui.safety import inert, redact

_TITLES = {
    "auth": "API key rejected",
    "model": "Model not available",
    "rate_limit": "Rate limited",
    "server": "Server error",
    "connection": "Provider unreachable",
    "timeout": "Timed out",
    "protocol": "Bad response",
    "bad_request": "Request rejected",
    "store": "Memory store",
    "internal": "Error",
}


class ErrorBlock(Static):
    DEFAULT_CSS = """
    ErrorBlock {
        height: auto;
        margin: 1 0 0 0;
        padding: 0 1;
        border-left: outer $error;
        background: $error 10%;
    }
    """

    def __init__(self, message: str, kind: str = "internal") -> None:
        super().__init__()
        self.message = message
        self.kind = kind
        title = _TITLES.get(kind, "Error")
        # Server and store text: shown inert, never as markup, no bearer token or userinfo.
        self.update(Content.assemble((f"✖ {title}", "bold $error"), "  ", inert(redact(message))))
