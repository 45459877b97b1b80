"""A person's image over real HTTP: the request carries it, the store keeps it."""

from __future__ import annotations

import asyncio
import json

from selfref_tui.agent import events as ev
from selfref_tui.agent.turn.router import AgentInputRouter
from selfref_tui.context.images import data_url, image_part
from selfref_tui.demo.script import Reply, Stall

from .helpers import STALL_PATIENCE_S, wait_until

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
URL = data_url("image/png", PNG)


def _last_user(body: dict) -> dict:
    return [m for m in body["messages"] if m["role"] == "user"][-1]


async def test_an_attached_image_travels_as_an_image_url_part_and_is_stored(harness):
    async with harness([Reply(text="A black square.")]) as h:
        router = AgentInputRouter(h.agent)
        assert router.submit("what is this?", [URL]) == "started"
        await router.wait_idle()
        assert router.outcomes == ["done"]
        assert _last_user(h.server.requests[0])["content"] == [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": URL}},
        ]
        # Front ends are told the text; the image is in the stored message.
        assert h.of(ev.TurnStarted)[0].user_text == "what is this?"
    stored = h.reload()
    user = [m for m in stored.messages if m["role"] == "user"][-1]
    assert user["content"][1]["image_url"]["url"] == URL


async def test_an_image_typed_during_a_turn_is_queued_with_its_text(harness):
    release = asyncio.Event()
    script = [Stall(event=release, text_before="thinking"), Reply(text="Seen it.")]
    async with harness(script) as h:
        router = AgentInputRouter(h.agent)
        router.submit("first")
        await wait_until(lambda: script[0].reached.is_set())
        assert router.submit("and this picture", [URL]) == "queued"
        assert router.queued == ["and this picture"]
        release.set()
        await router.wait_idle()
        # Typed after the turn's last step: it starts the next turn, image and all.
        assert [e.user_text for e in h.of(ev.TurnStarted)] == ["first", "and this picture"]
        parts = _last_user(h.server.requests[-1])["content"]
        assert parts[-1] == {"type": "image_url", "image_url": {"url": URL}}


async def test_a_server_refusing_images_gets_a_message_naming_the_model(harness):
    async with harness([Reply(text="text only from here")]) as h:
        h.server.refuse_images = True
        router = AgentInputRouter(h.agent)
        router.submit("describe it", [URL])
        await router.wait_idle()
        (error,) = h.of(ev.ErrorEvent)
        assert error.message.startswith("model 'selfref-demo' does not accept images — remove "
                                        "the attachment")
        assert "pick a vision model" in error.message and "400" in error.message
        assert len(h.server.requests) == 1  # a refusal is not retried
        assert h.of(ev.MessageFailed)
        # The next message goes without the refused image (the failed one is left out).
        router.submit("just text then")
        await router.wait_idle()
        assert router.outcomes == ["error", "done"]
        sent = h.server.requests[-1]["messages"]
        assert all(isinstance(m.get("content"), str) for m in sent)


async def test_the_controller_refuses_images_before_start_up_and_sends_them_after(tmp_path):
    import pytest

    from selfref_tui.agent.chat.controller import ChatController, Refused
    from selfref_tui.config import AppConfig, ProviderConfig
    from selfref_tui.demo.server import DemoServer

    server = DemoServer([Reply(text="Seen.")])
    async with server as url:
        provider = ProviderConfig(base_url=url, api_key="test", model="test-model",
                                  max_retries=0, timeout_s=STALL_PATIENCE_S, context_window=128_000)
        controller = ChatController(AppConfig(provider=provider, data_dir=tmp_path / "data",
                                              key="main"))
        try:
            with pytest.raises(Refused, match="images stay in the input"):
                controller.submit("look", [URL])
            assert controller.early_inputs == []  # not kept without its image
            await controller.start(lambda event: None)
            await controller.open_key("main")
            assert controller.submit("look", [URL]) == "started"
            await wait_until(lambda: len(server.requests) == 1)
        finally:
            await controller.aclose()
    assert _last_user(server.requests[0])["content"][1]["image_url"]["url"] == URL


class ShotSource:
    """A tool whose result is an image (a screenshot tool, say)."""

    def schemas(self) -> list[dict]:
        return [{"type": "function", "function": {
            "name": "shot", "description": "Take a screenshot.",
            "parameters": {"type": "object", "properties": {}}}}]

    def handles(self, name: str) -> bool:
        return name == "shot"

    async def call(self, name, args, ctx):
        from selfref_tui.agent.tools.batch import MultimodalOutput
        from selfref_tui.context.images import image_part

        return MultimodalOutput(text="a screenshot", user_messages=[{
            "role": "user", "content": [{"type": "text", "text": "The screenshot:"},
                                        image_part(URL)]}])


async def test_a_tools_image_on_a_text_only_model_is_left_out_and_the_turn_goes_on(harness):
    from selfref_tui.demo.script import ToolCall

    script = [Reply(tool_calls=[ToolCall("shot", {})]), Reply(text="I cannot see it."),
              Reply(text="Sure.")]
    async with harness(script) as h:
        h.server.refuse_images = True
        h.agent.tool_sources.append(ShotSource())
        router = AgentInputRouter(h.agent)
        router.submit("take a screenshot")
        await router.wait_idle()
        assert router.outcomes == ["done"] and not h.of(ev.ErrorEvent)
        assert not h.of(ev.MessageFailed)
        (notice,) = [n for n in h.of(ev.Notice) if "images" in n.message]
        assert "model 'selfref-demo' does not accept images" in notice.message
        # refused once with the image, then asked again with the placeholder in its place
        assert len(h.server.requests) == 3
        assert _last_user(h.server.requests[1])["content"][1]["type"] == "image_url"
        carrier = _last_user(h.server.requests[2])
        assert carrier["content"] == ("The screenshot:\n"
                                      "[image omitted: model selfref-demo does not accept images]")
        # the person's next message follows the result: a request the strict server takes
        router.submit("thanks")
        await router.wait_idle()
        assert router.outcomes == ["done", "done"]
        sent = h.server.requests[-1]["messages"]
        assert [m["role"] for m in sent[-4:]] == ["assistant", "user", "assistant", "user"]
        assert "[image omitted" in sent[-3]["content"] and sent[-1]["content"] == "thanks"
    stored = h.reload()
    assert not any(m.get("failed") for m in stored.messages)
    kept = [m for m in stored.messages if m.get("multimodal_for")]
    assert kept[-1]["content"][1]["image_url"]["url"] == URL  # the store keeps the image


async def test_a_turn_failing_after_a_tools_image_marks_no_message_failed(harness):
    from selfref_tui.demo.script import HttpError, ToolCall

    script = [Reply(tool_calls=[ToolCall("shot", {})]),
              HttpError(400, "tool results may not follow", type="invalid_request_error"),
              Reply(text="Sure.")]
    async with harness(script) as h:
        h.agent.tool_sources.append(ShotSource())
        router = AgentInputRouter(h.agent)
        router.submit("take a screenshot")
        await router.wait_idle()
        assert router.outcomes == ["error"]
        # the tool's result is not the person's message: nothing to mark or take out
        assert not h.of(ev.MessageFailed)
        router.submit("try again")
        await router.wait_idle()
        assert router.outcomes == ["error", "done"]
        sent = h.server.requests[-1]["messages"]
        assert sent[-2]["content"].startswith("I called shot(")
        assert sent[-1]["content"][1]["image_url"]["url"] == URL  # the result is still sent
        assert sent[-1]["content"][-1] == {"type": "text", "text": "try again"}
    assert not any(m.get("failed") for m in h.reload().messages)


async def test_a_tools_image_left_out_after_a_persons_image_was_refused_is_told_once(harness):
    """The server refused the person's image, so from then on tools' images go as
    '[image omitted: …]': the person hears it once for that server, not at every image."""
    from selfref_tui.demo.script import ToolCall

    script = [Reply(tool_calls=[ToolCall("shot", {})]), Reply(text="I cannot see it."),
              Reply(tool_calls=[ToolCall("shot", {})]), Reply(text="Nor this one.")]
    async with harness(script) as h:
        h.server.refuse_images = True
        h.agent.tool_sources.append(ShotSource())
        router = AgentInputRouter(h.agent)
        router.submit("describe it", [URL])
        await router.wait_idle()
        assert router.outcomes == ["error"]  # the person's image: refused, message failed

        def told() -> list[ev.Notice]:
            return [n for n in h.of(ev.Notice) if "image" in n.message]

        assert told() == []
        router.submit("take a screenshot")
        await router.wait_idle()
        assert router.outcomes == ["error", "done"]
        (notice,) = told()
        assert notice.severity == "warning"
        assert "model 'selfref-demo' does not accept images" in notice.message
        assert "a tool's image is left out" in notice.message
        assert "[image omitted" in _last_user(h.server.requests[-1])["content"]
        router.submit("and another")
        await router.wait_idle()
        assert router.outcomes == ["error", "done", "done"]
        assert len(told()) == 1  # once per server, not once per image


async def test_an_image_already_in_the_request_is_not_carried_twice(harness):
    """The same picture attached again goes once per request; the store keeps both."""
    from selfref_tui.context.images import REPEATED_TEXT, image_urls

    other = data_url("image/png", PNG + b"\x01")
    async with harness([Reply(text="A square."), Reply(text="The same square."),
                        Reply(text="Still.")]) as h:
        router = AgentInputRouter(h.agent)
        for text, urls in (("what is this?", [URL]), ("and these?", [URL, other, URL]),
                           ("thanks", [])):
            router.submit(text, urls)
            await router.wait_idle()
        assert router.outcomes == ["done"] * 3
        sent = [[url for m in body["messages"] for url in image_urls(m.get("content"))]
                for body in h.server.requests]
        assert sent == [[URL], [URL, other], [URL, other]]
        second = _last_user(h.server.requests[1])["content"]
        assert [p.get("text") for p in second] == ["and these?", REPEATED_TEXT, None,
                                                  REPEATED_TEXT]
    stored = [m for m in h.reload().messages if m["role"] == "user"]
    assert image_urls(stored[1]["content"]) == [URL, other, URL]


async def test_an_image_repeated_after_a_cut_still_goes_with_the_message_kept(harness):
    """When the oldest messages are left out to fit the window, a picture first
    attached there and attached again in a kept message is carried by the kept one:
    the words "the same image as shown earlier" would point at nothing sent."""
    from selfref_tui.context.images import REPEATED_TEXT, image_urls
    from selfref_tui.context.mutations import AssistantMessageMutation, UserMessageMutation

    words = "lorem ipsum dolor sit amet " * 40  # ~270 tokens a message
    async with harness([Reply(text="The same square.")], context_window=2600) as h:
        h.agent.compaction.ratio = 0  # no reminders: this is about fitting
        memory = h.selfref.open("main")
        memory.commit([UserMessageMutation({"role": "user", "content": [
            {"type": "text", "text": "what is this?"}, image_part(URL)]}),
            AssistantMessageMutation(content="A square.")])
        for i in range(8):
            memory.commit([UserMessageMutation({"role": "user", "content": f"q{i} {words}"}),
                           AssistantMessageMutation(content=f"a{i} {words}")])
        router = AgentInputRouter(h.agent)
        router.submit("and this one again?", [URL])
        await router.wait_idle()
        assert router.outcomes == ["done"]
        sent = h.server.requests[0]["messages"]
        assert "are left out of this request" in sent[0]["content"]
        assert [url for m in sent for url in image_urls(m.get("content"))] == [URL]
        assert REPEATED_TEXT not in json.dumps(sent)
