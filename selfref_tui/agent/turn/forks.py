"""Child agents: ``fork_spawn`` and ``fork_gather_all`` for one parent turn.

A child is an ordinary turn under its own memory key (``<parent>::fork::<n>``)
that starts from the parent's transcript as it was before the assistant
message that spawned it, plus one user message with the task. Running it
under its own key is what keeps it from changing the parent's context, and
what lets a person read its whole transcript later. Numbers come from the
parent's persisted fork records, so a fork id never means two children.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from ...context.mutations import ContextReplaceMutation, UserMessageMutation
from ..abort import AbortSignal
from ..events import ForkFinished, ForkProgress, ForkSpawned
from ..tools.builtin import ToolError, now_iso
from .inbox import Inbox

if TYPE_CHECKING:
    from ...config import AgentSettings
    from ..events import EventSink
    from ..protocols import MemoryLike
    from .state import TurnState


class ForkHost(Protocol):
    """What a fork needs of the agent that runs its parent (``loop.Agent`` provides it)."""

    settings: AgentSettings
    emit: EventSink

    def memory(self, key: str) -> MemoryLike: ...

    async def run_key(self, key: str, user_text: str | None, *, abort: AbortSignal,
                      inbox: Inbox, depth: int = 0, fds: Any | None = None,
                      on_step: Callable[[str, int], None] | None = None) -> str: ...

FORK_PREFIX = "fork_"


@dataclass
class _Child:
    fork_id: str
    child_key: str
    task_text: str
    created: str
    abort: AbortSignal = field(default_factory=AbortSignal)
    task: asyncio.Task | None = None
    result: dict[str, Any] | None = None
    gathered: bool = False


def child_message(task: str, instruction: str) -> str:
    text = f"You are a forked child agent. Your task:\n{task}"
    if instruction.strip():
        text += f"\n\nInstructions:\n{instruction}"
    text += "\n\nWork on this task only and end with your answer; it is returned to the parent."
    return text


def pre_fork_snapshot(messages: list[dict], call_id: str) -> list[dict]:
    """The transcript before the assistant message holding ``call_id``."""
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if message.get("role") == "assistant" and any(
            c.get("id") == call_id for c in message.get("tool_calls") or []
        ):
            return [dict(m) for m in messages[:i]]
    return [dict(m) for m in messages]


class ForkManager:
    """The children of one parent turn, limited in number and concurrency."""

    def __init__(self, agent: ForkHost, turn: TurnState) -> None:
        self.agent = agent
        self.turn = turn
        self.parent_key = turn.key
        settings = agent.settings
        self._semaphore = asyncio.Semaphore(max(1, settings.max_concurrent_forks))
        self._max_per_turn = settings.max_forks_per_turn
        self._children: dict[str, _Child] = {}

    @property
    def running(self) -> bool:
        return any(c.task is not None and not c.task.done() for c in self._children.values())

    def _next_number(self) -> int:
        numbers = [0]
        for fork_id in [*self.turn.memory.forks, *self._children]:
            tail = fork_id.removeprefix(FORK_PREFIX)
            if tail.isascii() and tail.isdigit():  # a log is input: "²" is no number to int
                numbers.append(int(tail))
        return max(numbers) + 1

    def spawn(self, task: str, instruction: str, call_id: str) -> dict[str, str]:
        if len(self._children) >= self._max_per_turn:
            raise ToolError(
                f"at most {self._max_per_turn} forks per turn; call fork_gather_all and "
                "finish with the results you have"
            )
        n = self._next_number()
        fork_id = f"{FORK_PREFIX}{n}"
        child_key = f"{self.parent_key}::fork::{n}"
        snapshot = pre_fork_snapshot(self.turn.memory.messages, call_id)
        # the parent's instructions went into every request it made: the child, which
        # works from the parent's context, sees them too (kept in its own settings)
        instructions = self.turn.memory.settings.instructions
        child = _Child(fork_id, child_key, task, now_iso())
        self._children[fork_id] = child
        self._record(child, "queued")
        self.agent.emit(ForkSpawned(key=self.parent_key, fork_id=fork_id, child_key=child_key,
                                    task=task))
        child.task = asyncio.create_task(
            self._run_child(child, snapshot, child_message(task, instruction), instructions),
            name=f"fork:{child_key}",
        )
        return {"fork_id": fork_id, "status": "queued"}

    async def _run_child(self, child: _Child, snapshot: list[dict], message: str,
                         instructions: str = "") -> dict:
        agent = self.agent
        self._progress(child, "queued", 0)
        status, response, error = "error", "", None
        try:
            async with self._semaphore:
                if child.abort.fired:
                    status = "cancelled"
                    error = child.abort.reason
                else:
                    self._record(child, "running")
                    memory = agent.memory(child.child_key)
                    if instructions != memory.settings.instructions:
                        memory.save_settings(replace(memory.settings, instructions=instructions))
                    fds = self.turn.fds.child(child.fork_id.removeprefix(FORK_PREFIX))
                    memory.commit(
                        [
                            ContextReplaceMutation(snapshot),
                            UserMessageMutation({"role": "user", "content": message}),
                        ],
                        records=fds.records(),
                    )
                    outcome = await agent.run_key(
                        child.child_key,
                        None,
                        abort=child.abort,
                        inbox=Inbox(),
                        depth=self.turn.depth + 1,
                        fds=fds,
                        on_step=lambda s, step: self._progress(child, s, step),
                    )
                    response = _last_answer(memory.messages)
                    if outcome == "done":
                        status = "completed"
                    elif outcome == "aborted":
                        status, error = "cancelled", child.abort.reason or "cancelled"
                    elif outcome == "step_limit":
                        status, error = "error", "the child reached the step limit"
                    else:
                        status, error = "error", "the child's LLM call failed"
        except asyncio.CancelledError:
            status, error = "cancelled", child.abort.reason or "cancelled"
            self._finish(child, status, response, error)
            raise
        except Exception as exc:
            status, error = "error", f"the child failed: {exc}"
        return self._finish(child, status, response, error)

    def _finish(self, child: _Child, status: str, response: str, error: str | None) -> dict:
        child.result = {"status": status, "response": response}
        if error is not None:
            child.result["error"] = error
        self._record(child, status, response, error)
        self.agent.emit(ForkFinished(key=self.parent_key, fork_id=child.fork_id,
                                     child_key=child.child_key, status=status,
                                     response=response, error=error))
        return child.result

    async def gather_all(self, *, include_history: bool = False,
                         records: list[dict] | None = None) -> dict[str, dict]:
        """Wait for every child not gathered yet; fork_id -> result."""
        wanted = [c for c in self._children.values() if not c.gathered]
        tasks = [c.task for c in wanted if c.task is not None]
        if tasks:
            await asyncio.wait(tasks)
        results: dict[str, dict] = {}
        threshold = self.agent.settings.fd_threshold_chars
        for child in wanted:
            child.gathered = True
            result = dict(child.result or {"status": "error", "response": "", "error": "no result"})
            if len(result.get("response") or "") > threshold:
                text, record = self.turn.fds.add_output(
                    result["response"], now_iso(), f"fork:{child.fork_id}"
                )
                result["response"] = text
                if record is not None and records is not None:
                    records.append(record if "t" in record else {"t": "fd", **record})
            if include_history:
                result["history"] = [
                    {"role": m.get("role"), "content": m.get("content")}
                    for m in self.agent.memory(child.child_key).history
                    if m.get("role") in ("user", "assistant", "tool")
                ]
            results[child.fork_id] = result
        return results

    async def cancel_all(self, reason: str) -> None:
        """Cancel every running child (abort or end of the parent turn)."""
        live = [c for c in self._children.values() if c.task is not None and not c.task.done()]
        for child in live:
            child.abort.fire(reason)
        if live:
            await asyncio.gather(*(c.task for c in live if c.task), return_exceptions=True)

    # ------------------------------------------------------------- helpers

    def _progress(self, child: _Child, status: str, step: int) -> None:
        self.agent.emit(ForkProgress(key=self.parent_key, fork_id=child.fork_id,
                                     child_key=child.child_key, status=status, step=step))

    def _record(self, child: _Child, status: str, response: str | None = None,
                error: str | None = None) -> None:
        record = {
            "t": "fork",
            "fork_id": child.fork_id,
            "child_key": child.child_key,
            "task": child.task_text,
            "status": status,
            "response": response,
            "error": error,
            "created": child.created,
            "updated": now_iso(),
        }
        self.turn.memory.commit(records=[record])


def _last_answer(messages: list[dict]) -> str:
    for message in reversed(messages):
        if message.get("role") == "assistant" and message.get("content"):
            return str(message["content"])
    return ""
