"""The app learns the model's window from the server after its first frame."""

from __future__ import annotations

from selfref_tui.demo import DemoServer, Reply

from .helpers import SIZE, make_app, started, wait_until


async def test_window_is_read_from_llama_cpp_props_after_the_first_frame(tmp_path):
    server = DemoServer([Reply(text="hi")], context_window=4096, window_sources=("props",))
    async with server as url:
        app = make_app(tmp_path, url, context_window=None)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await wait_until(pilot, lambda: app.sidebar.meter.window == 4096,
                             what="window from /props")
            assert app.agent.context_window == 4096
            assert not any("window unknown" in n.message for n in app._notifications)
        assert "props" in server.window_requests
        # asked once per server and model: the next start reads the data dir's cache
        asked = len(server.window_requests)
        app = make_app(tmp_path, url, context_window=None)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await wait_until(pilot, lambda: app.sidebar.meter.window == 4096,
                             what="cached window")
        # (the app's start-up reachability check lists models each start: not a window question)
        assert [r for r in server.window_requests[asked:] if r != "models"] == []
        assert server.window_requests[asked:].count("models") <= 1


async def test_unknown_window_is_assumed_8k_and_said(tmp_path):
    async with DemoServer([Reply(text="hi")]) as url:
        app = make_app(tmp_path, url, context_window=None)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await wait_until(pilot, lambda: any("window unknown, assumed 8k" in n.message
                                                for n in app._notifications),
                             what="the assumed-window notice")
            assert app.agent.context_window == 8192
            # the meter counts in a thread after the window is known: the notice may come first
            await wait_until(pilot, lambda: app.sidebar.meter.window == 8192,
                             what="the meter on the assumed window")
