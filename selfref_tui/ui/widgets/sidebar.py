"""The right-hand panel: what the agent remembers, its refs, and context use.

The app assigns ``sidebar.experiences`` and ``sidebar.refs`` (the store's rows,
or ``None`` while a key is being opened); both are bound to the lists below
with ``data_bind``, which update only the rows that changed. The meter is fed
through its own reactives (``sidebar.meter.tokens`` …). Messages from the parts
bubble through unchanged.

Built with ``parts_later``, the panel (its border and background) is on the
first frame and its parts are mounted by :meth:`Sidebar.mount_parts` (the app
calls it just after that frame): they show nothing but "Loading…" until a key
is open, and mounting them cost as much as a sixth of a bare Textual app's
whole start-up (``bench/startup_bench.py --instructions``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import var
from textual.widget import Widget
from textual.widgets import Rule

from selfref_tui.ui.widgets.context_meter import ContextMeter
from selfref_tui.ui.widgets.experience_list import Experience, ExperienceList, experience_rows
from selfref_tui.ui.widgets.ref_list import RefList, RefRow, ref_rows


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

    #: the shown key's experiences, or None while a key is being opened
    experiences: var[tuple[Experience, ...] | None] = var(None)
    #: its refs, one row per definition in display order, or None while opening
    refs: var[tuple[RefRow, ...] | None] = var(None)

    def __init__(
        self,
        *,
        compact_ratio: float = 0.8,
        clock: Callable[[], float] = time.monotonic,
        parts_later: bool = False,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._compact_ratio = compact_ratio
        self._clock = clock
        self._parts_later = parts_later
        #: set once the lists and the meter are mounted (at once without ``parts_later``)
        self.parts_mounted = asyncio.Event()
        #: why mounting them failed (start-up says so), else None
        self.parts_error: Exception | None = None

    def compose(self) -> ComposeResult:
        if not self._parts_later:
            yield from self._parts()

    def on_mount(self) -> None:
        if not self._parts_later:
            self.parts_mounted.set()

    def _parts(self) -> list[Widget]:
        return [
            ExperienceList(None).data_bind(rows=Sidebar.experiences),
            Rule(classes="-sidebar-rule"),
            RefList(None).data_bind(rows=Sidebar.refs),
            ContextMeter(compact_ratio=self._compact_ratio, clock=self._clock),
        ]

    def mount_parts(self) -> None:
        """Mount the parts a ``parts_later`` sidebar was built without (once)."""
        if self._parts_later:
            self._parts_later = False
            # From the sidebar's own loop: data_bind binds to the node that is running.
            self.call_later(self._mount_parts)

    async def _mount_parts(self) -> None:
        try:
            await self.mount_all(self._parts())
        except Exception as exc:  # start-up waits for the event: it reports this
            self.parts_error = exc
        finally:
            self.parts_mounted.set()  # set even on failure, or start-up would wait forever

    @property
    def experience_list(self) -> ExperienceList:
        return self.query_one(ExperienceList)

    @property
    def ref_list(self) -> RefList:
        return self.query_one(RefList)

    @property
    def meter(self) -> ContextMeter:
        return self.query_one(ContextMeter)

    def validate_experiences(
        self, experiences: Sequence[Experience | Mapping[str, Any]] | None
    ) -> tuple[Experience, ...] | None:
        return experience_rows(experiences)

    def validate_refs(
        self, refs: Sequence[RefRow | Mapping[str, Any]] | None
    ) -> tuple[RefRow, ...] | None:
        return ref_rows(refs)
