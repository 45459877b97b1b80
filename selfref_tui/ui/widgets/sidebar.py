"""The right-hand panel: what the agent remembers, its refs, and context use.

A thin container so the app can feed each part directly through the typed
properties below; messages from the parts bubble through it unchanged.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Rule

from selfref_tui.ui.widgets.context_meter import ContextMeter
from selfref_tui.ui.widgets.experience_list import ExperienceList
from selfref_tui.ui.widgets.ref_list import RefList


class Sidebar(Vertical):
    """Experiences, refs and the context meter, stacked."""

    DEFAULT_CSS = """
    Sidebar {
        width: 40;
        height: 1fr;
        padding: 1 0 0 0;
        border-left: vkey $foreground 10%;
        background: $surface;
    }
    Sidebar > Rule.-sidebar-rule {
        margin: 0 1;
        color: $foreground 10%;
    }
    /* Refs take the space left, so the meter always sits at the bottom, never on top. */
    Sidebar > RefList { height: 1fr; max-height: 100%; }
    Sidebar > RefList > OptionList { height: 1fr; }
    Sidebar > ContextMeter { margin: 1 0; }
    """

    def __init__(
        self,
        *,
        compact_ratio: float = 0.8,
        clock: Callable[[], float] = time.monotonic,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._compact_ratio = compact_ratio
        self._clock = clock

    def compose(self) -> ComposeResult:
        yield ExperienceList(loading=True)
        yield Rule(classes="-sidebar-rule")
        yield RefList(loading=True)
        yield ContextMeter(compact_ratio=self._compact_ratio, clock=self._clock)

    @property
    def experience_list(self) -> ExperienceList:
        return self.query_one(ExperienceList)

    @property
    def ref_list(self) -> RefList:
        return self.query_one(RefList)

    @property
    def meter(self) -> ContextMeter:
        return self.query_one(ContextMeter)

    def set_experiences(self, experiences: Sequence[Mapping[str, Any]]) -> None:
        self.experience_list.set_experiences(experiences)

    def set_refs(self, refs: Sequence[Mapping[str, Any]]) -> None:
        self.ref_list.set_refs(refs)

    def show_loading(self) -> None:
        """Between keys: neither list claims the new key has nothing."""
        self.experience_list.show_loading()
        self.ref_list.show_loading()
