"""Images in the store: one file per distinct image, named by hash; the log keeps the name."""

from __future__ import annotations

import hashlib

from selfref_tui.context.images import data_url, user_content
from selfref_tui.context.mutations import MultimodalToolResultMutation, UserMessageMutation
from selfref_tui.selfref import SelfReference
from selfref_tui.selfref.images import IMAGES_DIR, PREFIX
from selfref_tui.selfref.store import LOG_NAME

PNG = b"\x89PNG\r\n\x1a\n" + b"pixels" * 1000
GIF = b"GIF89a" + b"frames" * 500


def _message(text: str, *images: bytes, mime: str = "image/png") -> UserMessageMutation:
    urls = [data_url(mime, data) for data in images]
    return UserMessageMutation({"role": "user", "content": user_content(text, urls)})


def test_the_same_image_twice_is_one_file_and_the_log_holds_its_hash(tmp_path):
    store = SelfReference(tmp_path)
    memory = store.open("main")
    memory.commit([_message("look", PNG)])
    memory.commit([_message("again", PNG), _message("and a gif", GIF, mime="image/gif")])
    in_memory = [m["content"] for m in memory.messages]
    store.close()

    folder = store.key_dir("main") / IMAGES_DIR
    files = sorted(p.name for p in folder.iterdir())
    assert files == sorted({hashlib.sha256(PNG).hexdigest(), hashlib.sha256(GIF).hexdigest()})
    assert (folder / hashlib.sha256(PNG).hexdigest()).read_bytes() == PNG
    log = (store.key_dir("main") / LOG_NAME).read_text()
    assert "base64" not in log and log.count(PREFIX) == 3
    assert len(log) < len(PNG)  # the bytes are not in the log, not even once

    # Memory equals a reload exactly: the data URLs are back, in the same parts.
    reloaded = SelfReference(tmp_path).open("main", write=False)
    assert [m["content"] for m in reloaded.messages] == in_memory
    assert in_memory[0][1]["image_url"]["url"] == data_url("image/png", PNG)
    assert in_memory[2][1]["image_url"]["url"] == data_url("image/gif", GIF)
    assert reloaded.take_warnings() == []


def test_a_tool_results_images_are_stored_by_hash_too(tmp_path):
    store = SelfReference(tmp_path)
    memory = store.open("main")
    parts = [{"type": "text", "text": "Result of draw:"},
             {"type": "image_url", "image_url": {"url": data_url("image/png", PNG)}}]
    memory.commit([MultimodalToolResultMutation("c1", "draw", "{}",
                                                [{"role": "user", "content": parts}])])
    store.close()
    log = (store.key_dir("main") / LOG_NAME).read_text()
    assert "base64" not in log
    reloaded = SelfReference(tmp_path).open("main", write=False)
    assert reloaded.messages[-1]["content"] == parts


def test_a_missing_or_changed_image_is_named_and_never_sent_as_bytes(tmp_path):
    store = SelfReference(tmp_path)
    memory = store.open("main")
    memory.commit([_message("one", PNG), _message("two", GIF, mime="image/gif")])
    store.close()
    folder = store.key_dir("main") / IMAGES_DIR
    (folder / hashlib.sha256(PNG).hexdigest()).unlink()
    (folder / hashlib.sha256(GIF).hexdigest()).write_bytes(b"GIF89a changed")

    reloaded = SelfReference(tmp_path).open("main", write=False)
    first, second = (m["content"] for m in reloaded.messages)
    assert first[1] == {"type": "text", "text":
                        f"[an image (sha256 {hashlib.sha256(PNG).hexdigest()[:12]}) is "
                        "missing from the store]"}
    assert second[1]["type"] == "text" and "missing from the store" in second[1]["text"]
    warnings = reloaded.take_warnings()
    assert any("is missing" in w for w in warnings)
    assert any("were changed" in w for w in warnings)


def test_renaming_a_key_keeps_its_images(tmp_path):
    store = SelfReference(tmp_path)
    memory = store.open("main")
    memory.commit([_message("one", PNG)])
    store.close()
    store.rename("main", "pictures")
    reloaded = SelfReference(tmp_path).open("pictures", write=False)
    assert reloaded.messages[-1]["content"][1]["image_url"]["url"] == data_url("image/png", PNG)
    assert reloaded.take_warnings() == []
