"""The trust boundary at the app's own outputs: notifications, the clipboard, links.

A mixin of :class:`~selfref_tui.ui.app.SelfRefApp`, ahead of Textual's ``App`` so its
methods are the ones that run. Every notification is plain, inert and secret-free text
(Textual would parse markup in a server's words as an action a click runs); a copy
carries no lone surrogate (the OSC 52 request is UTF-8); a clicked link opens only as a
web page. Apart from the app because these are the doors text leaves it by, kept
together so that none is missed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from selfref_tui.safety import inert, inert_line, redact, writable

if TYPE_CHECKING:
    from selfref_tui.config import AppConfig


class PlainOutput:
    """Notify, copy and open links, in plain text only."""

    if TYPE_CHECKING:  # provided by SelfRefApp, its other mixins and Textual's App
        NOTIFICATION_TIMEOUT: float

        @property
        def config(self) -> AppConfig: ...
        def post_notice(self, message: str, *, title: str, severity: Any, timeout: float,
                        topic: str) -> None: ...
        def _fit_toasts_soon(self) -> None: ...
        def _key_label(self, binding_id: str | None, default: str) -> str: ...

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
        topic: str = "",
    ) -> None:
        """Every notification is plain, inert, secret-free text: never markup.

        Notifications quote servers, stores and paths; Textual would parse
        ``[@click=app.quit]`` in them as an action a click runs. ``markup`` is
        accepted for Textual's signature and ignored. ``topic``: a newer notice of
        the topic supersedes one held behind a dialog, and an empty ``message``
        withdraws it (see :class:`~selfref_tui.ui.toast_room.ToastRoom`).
        """
        self.post_notice(
            inert(self.secret_free(str(message))),
            title=inert_line(self.secret_free(str(title))),
            severity=severity,
            timeout=self.NOTIFICATION_TIMEOUT if timeout is None else timeout,
            topic=topic,
        )
        self._fit_toasts_soon()  # once Textual has taken it in

    def copy_to_clipboard(self, text: str) -> None:
        """Every copy (the copy key, the input's own): a lone surrogate in the text (half
        an emoji's pair a server cut) as its escape. The OSC 52 request is UTF-8, which
        has no bytes for one: encoding it stopped the app."""
        super().copy_to_clipboard(writable(text))

    def action_help_quit(self) -> None:
        """ctrl+c outside a selection: Textual's hint, said in plain text (its own was
        markup, shown as "Press [b]ctrl+q[/b]" here, where notifications never are)."""
        quit_key = self._key_label("quit", "ctrl+q").split(",")[0].strip()
        self.notify(f"Press {quit_key} to quit the app.", title="Do you want to quit?")

    def open_url(self, url: str, *, new_tab: bool = True) -> None:
        """A clicked link (an answer's Markdown) opens only as a web page, never anything else."""
        if url.lower().startswith(("http://", "https://")):
            super().open_url(url, new_tab=new_tab)
        else:
            self.notify(f"Not opened: {inert_line(url, 80)} is not a web link.", timeout=4)
