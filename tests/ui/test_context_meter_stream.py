"""The context meter during a fast stream: redrawn on its clock's tick, not per batch of text."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.content import Content

from selfref_tui.ui.widgets.context_meter import ContextMeter
from tests.ui.helpers import FakeClock


class RecordingMeter(ContextMeter):
    """Keeps the text of every drawing (the last one is what the screen shows)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.drawn: list[str] = []

    def render(self) -> Content:
        shown = super().render()
        self.drawn.append(str(shown))
        return shown


class MeterApp(App):
    def __init__(self, clock: FakeClock) -> None:
        super().__init__()
        self.clock = clock

    def compose(self) -> ComposeResult:
        yield RecordingMeter(clock=self.clock)


async def test_a_stream_redraws_the_meter_on_its_tick_and_ends_on_the_final_figures():
    clock = FakeClock()
    app = MeterApp(clock)
    async with app.run_test(size=(60, 10)) as pilot:
        meter = app.query_one(RecordingMeter)
        meter.tokens, meter.window = 1_000, 10_000
        meter.tick_s = 3600  # no tick during the test: only what the batches cause is drawn
        meter.streaming = True
        await pilot.pause()
        drawn = len(meter.drawn)
        for batch in range(1, 41):  # 40 batches of text, as the event bridge sets them
            clock.now += 0.05
            meter.stream_tokens = batch * 10
            await pilot.pause()
        assert len(meter.drawn) == drawn
        meter.streaming = False
        await pilot.pause()
        assert "last answer · 200 tok/s · 2.0s" in meter.drawn[-1]


async def test_drawing_the_meter_does_not_restyle_it():
    app = MeterApp(FakeClock())
    async with app.run_test(size=(60, 10)) as pilot:
        meter = app.query_one(RecordingMeter)
        meter.tokens, meter.window = 1_000, 10_000
        await pilot.pause()
        restyles: list[bool] = []
        meter.update_node_styles = lambda animate=True: restyles.append(animate)  # type: ignore[method-assign]
        for _ in range(5):
            meter.render()  # reads the computed level: Textual calls its watcher every time
        assert restyles == []
        assert meter.has_class("-ok")
        meter.tokens = 9_000
        assert meter.level == "over"
        assert meter.has_class("-over") and not meter.has_class("-ok")
        assert len(restyles) == 2  # "-ok" removed, "-over" added: once each
