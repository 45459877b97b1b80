"""What the strictest real servers refuse, refused the same way by the demo server.

OpenAI accepts ``content: null``, two user messages in a row and a late
system message; llama.cpp's server and strict chat templates do not, so a
client tested only against a lenient server ships requests those servers
refuse (a conversation with a tool call could once never be continued on
llama.cpp). Each refusal copies a real server's status code and error text:

- ``content: null`` on an assistant message: llama-cpp-python's pydantic
  request model fails and its route handler answers HTTP 500 with the
  validation errors (one per branch of the message union) as the message;
- a system message after the start: Qwen-style templates raise "System message
  must be at the beginning." (400, as vLLM reports template errors);
- two user messages in a row: Gemma/Mistral templates raise "Conversation
  roles must alternate user/assistant/user/assistant/..." (400);
- a tool result that answers no call of the assistant before it: OpenAI's own
  400 "messages with role 'tool' must be a response to a preceeding message
  with 'tool_calls'".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_ROLE_OF = {"ChatCompletionRequestSystemMessage": "system",
            "ChatCompletionRequestUserMessage": "user",
            "ChatCompletionRequestAssistantMessage": "assistant",
            "ChatCompletionRequestToolMessage": "tool",
            "ChatCompletionRequestFunctionMessage": "function"}


@dataclass(frozen=True)
class Refusal:
    """An HTTP error answer: status code and the OpenAI-style error object."""

    status: int
    message: str
    type: str = "invalid_request_error"
    param: str | None = "messages"
    code: str | None = None

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param,
                          "code": self.code}}


def strict_refusal(body: dict) -> Refusal | None:
    """The refusal a strict server gives ``body``, or None when it would accept it."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return None
    null_content = [i for i, m in enumerate(messages) if isinstance(m, dict)
                    and m.get("role") == "assistant" and "content" in m
                    and m["content"] is None]
    if null_content:
        return _validation_errors(messages, null_content)
    open_calls: set[str] = set()
    previous = None
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "system" and i > 0:
            return Refusal(400, "System message must be at the beginning.", "BadRequestError")
        if role == "user" and previous == "user":
            return Refusal(400, "Conversation roles must alternate user/assistant/user/"
                           "assistant/...", "BadRequestError")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if previous not in ("assistant", "tool") or call_id not in open_calls:
                return Refusal(400, "Invalid parameter: messages with role 'tool' must be a "
                               "response to a preceeding message with 'tool_calls'.",
                               param=f"messages.[{i}].role")
            open_calls.discard(call_id)
        elif role == "assistant":
            calls = message.get("tool_calls") or []
            open_calls = {c.get("id") for c in calls if isinstance(c, dict)}
        else:
            open_calls = set()
        previous = role
    return None


def _validation_errors(messages: list, indexes: list[int]) -> Refusal:
    """llama-cpp-python 0.3.36's answer to a body its request model refuses: HTTP 500
    with FastAPI's validation errors, one per branch of the message union (the text
    was taken from the real server)."""
    lines: list[str] = []
    for i in indexes:
        found = {k: v for k, v in messages[i].items()}
        for branch, role in _ROLE_OF.items():
            loc = f"('body', 'messages', {i}, '{branch}', "
            if role == "assistant":
                lines.append(f"  {{'type': 'string_type', 'loc': {loc}'content'), 'msg': "
                             "'Input should be a valid string', 'input': None}")
                continue
            lines.append(f"  {{'type': 'literal_error', 'loc': {loc}'role'), 'msg': \"Input "
                         f"should be '{role}'\", 'input': 'assistant', 'ctx': {{'expected': "
                         f"\"'{role}'\"}}}}")
            missing = {"tool": "tool_call_id", "function": "name"}.get(role)
            if missing:
                lines.append(f"  {{'type': 'missing', 'loc': {loc}'{missing}'), 'msg': "
                             f"'Field required', 'input': {found!r}}}")
    head = f"{len(lines)} validation error{'s' if len(lines) != 1 else ''}:"
    return Refusal(500, "\n".join([head, *lines]), "internal_server_error", None)
