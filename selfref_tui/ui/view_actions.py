"""What the person looks at: the help, the context view, the sidebar, the highlight.

A mixin of :class:`~selfref_tui.ui.app.SelfRefApp`: F1's keys and commands (the app's
bindings under the person's keymap, then the input's own keys), the exact request the
next call would send (``/context``), the sidebar shown or hidden, the highlight moved
over refs and messages. Apart from the app because none of it changes the conversation:
each shows something and goes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from selfref_tui.agent.chat.refusals import Refused
from selfref_tui.ui.keymap import BINDINGS
from selfref_tui.ui.lazy_import import LazyModule

if TYPE_CHECKING:
    from selfref_tui.agent.chat.controller import ChatController
    from selfref_tui.ui import commands as slash
    from selfref_tui.ui.widgets.app_header import AppHeader
    from selfref_tui.ui.widgets.sidebar import Sidebar
    from selfref_tui.ui.widgets.transcript import Transcript
else:  # F1 imports the command table
    slash = LazyModule("selfref_tui.ui.commands")

#: keys the chat input handles itself, listed on the help screen after the app's bindings
INPUT_KEYS = [
    ("enter", "Send (shift+enter or ctrl+j: new line)"),
    ("up", "On an empty input: recall earlier inputs"),
    ("end", "On an empty input: back to the bottom of the transcript"),
    ("pageup / pagedown", "Scroll the transcript"),
    ("tab / shift+tab", "Move to the experiences and refs lists and back"),
    ("ctrl+g", "Expand a long paste shown as [pasted N lines #1] (the full text is sent)"),
]


class ViewActions:
    """Help, context, sidebar and highlight."""

    if TYPE_CHECKING:  # provided by SelfRefApp and its other mixins
        controller: ChatController
        _keymap: dict[str, str]

        @property
        def transcript(self) -> Transcript: ...
        @property
        def header(self) -> AppHeader: ...
        @property
        def sidebar(self) -> Sidebar: ...
        def notify(self, message: str, **kwargs: Any) -> None: ...
        def refused(self, exc: Refused, extra: str = "") -> None: ...
        def _keep_focus_visible(self) -> None: ...
        def push_screen(self, screen: Any, *args: Any, **kwargs: Any) -> Any: ...

    def action_ref_prev(self) -> None:
        if self.transcript.move_highlight(-1) is None:
            self.notify("Nothing to highlight in this conversation yet.")

    def action_ref_next(self) -> None:
        if self.transcript.move_highlight(+1) is None:
            self.notify("Nothing to highlight in this conversation yet.")

    def action_scroll_bottom(self) -> None:
        self.transcript.scroll_bottom()

    def action_toggle_sidebar(self) -> None:
        sidebar = self.sidebar
        sidebar.display = not sidebar.display
        self._keep_focus_visible()

    def action_help(self) -> None:
        from selfref_tui.ui.screens.help import HelpScreen

        # The tooltip says it all; the footer's label is cut to fit ("Prev ref").
        keys = [(self._key_label(b.id, b.key), b.tooltip or b.description)
                for b in BINDINGS if b.id]
        keys += INPUT_KEYS
        self.push_screen(HelpScreen(keys, slash.help_rows()))

    def _key_label(self, binding_id: str | None, default: str) -> str:
        return self._keymap.get(binding_id or "", default) if binding_id else default

    def action_show_context(self) -> None:
        from selfref_tui.ui.screens.context_view import ContextView

        try:
            plan = self.controller.preview()
        except Refused as exc:
            self.refused(exc)
            return
        self.push_screen(ContextView(plan.messages, plan.tokens, plan.tools,
                                     estimated=plan.estimated, left_out=plan.left_out,
                                     tools_total=plan.tools_total, model=self.header.model,
                                     window=self.sidebar.meter.window,
                                     breakdown=plan.breakdown,
                                     compaction=plan.compaction))
