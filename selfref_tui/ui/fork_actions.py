"""The fork panel on screen: when it opens, and when it goes away, mixed into the app.

The panel is an overlay over the transcript (app.tcss): it never takes the
input's width, nor the sidebar's place. It opens by itself when the agent
spawns a fork, unless the person closed it in this conversation; once every
fork has finished it says which key hides it, and a panel that opened by
itself goes away by itself when the turn is over too. ctrl+t opens and closes
it by hand, and a panel opened by hand stays until it is closed by hand.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from selfref_tui.agent.chat.controller import ChatController
    from selfref_tui.ui.widgets.fork_panel import ForkPanel


class ForkActions:
    """ctrl+t, and the fork panel opening and closing by itself."""

    if TYPE_CHECKING:  # what the app provides
        key: str
        controller: ChatController
        fork_panel: ForkPanel

        def _key_label(self, binding_id: str | None, default: str) -> str: ...
        def _keep_focus_visible(self) -> None: ...

    #: the panel is open because a fork was spawned, not because the person opened it
    _forks_opened_by_itself = False

    @property
    def forks_closed_in(self) -> set[str]:
        """The conversations whose fork panel the person closed: it stays closed there."""
        closed = self.__dict__.get("_forks_closed_in")
        if closed is None:
            closed = self.__dict__["_forks_closed_in"] = set()
        return closed

    def action_toggle_forks(self) -> None:
        """ctrl+t: the person opens or closes the panel (a close is remembered)."""
        show = not self.fork_panel.display
        if not show:
            self.forks_closed_in.add(self.key)
        self._forks_opened_by_itself = False
        self.show_forks(show)

    def show_forks(self, show: bool) -> None:
        """Open or close the panel; it lies over the transcript and takes nothing else."""
        panel = self.fork_panel
        panel.hide_key = self._key_label("toggle_forks", "ctrl+t").split(",")[0].strip()
        if panel.display != show:
            panel.display = show
            self._keep_focus_visible()

    def forks_spawned(self) -> None:
        """A fork started: show it, unless the person closed the panel in this conversation."""
        if not self.fork_panel.display and self.key not in self.forks_closed_in:
            self.show_forks(True)
            self._forks_opened_by_itself = True

    def forks_settled(self, *, turn_over: bool) -> None:
        """Every fork finished and the turn is over: a panel that opened by itself goes."""
        panel = self.fork_panel
        if (self._forks_opened_by_itself and panel.display and panel.all_finished
                and (turn_over or not self.controller.busy)):
            self._forks_opened_by_itself = False
            self.show_forks(False)

    def forks_of_another_conversation(self) -> None:
        """The conversation on screen changed: a panel that opened by itself goes with it."""
        if self._forks_opened_by_itself:
            self._forks_opened_by_itself = False
            self.show_forks(False)
