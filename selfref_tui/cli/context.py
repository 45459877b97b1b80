"""``selfref-tui context show``: the exact request the next call would send."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from selfref_tui.cli.common import (
    EXIT_OK,
    add_command,
    add_group,
    app_config,
    common_flags,
    conversation_provider,
    err,
    existing_key,
    key_of,
    nowhere_to_send,
    print_json,
    provider_flagged,
    provider_flags,
    run_async,
    say,
    store_notes,
    window_cache,
)
from selfref_tui.config import AppConfig, demo_provider


async def _cached_window(provider: Any, config: AppConfig) -> int:
    """The window for a command that only reports: the configured or cached one, else
    asked of the server (a down server answers at once: connection refused)."""
    from selfref_tui.agent.provider.window import resolve_window

    window = await resolve_window(provider, window_cache(config))
    for problem in window.problems:  # a window not believed, a cache file refused
        err(problem)
    return window.tokens


class _Shown:
    """The provider of a request that is only shown: ``context show`` sends nothing, so
    it makes no HTTP client (the ``openai`` package and what it imports: 0.7 s of the
    command's 2.4 s of CPU at 20,000 messages, measured at load 13). What the agent reads
    of a provider to plan a request is what a fresh ``Provider`` says: its server, and that
    it has refused no images."""

    images_ok = True

    def __init__(self, config: Any) -> None:
        self.config = config
        self.base_url = config.base_url
        self.model = config.model

    def stream(self, *_: Any, **__: Any) -> Any:
        raise RuntimeError("context show sends no request")

    async def aclose(self) -> None:
        pass


def _context_show(args: argparse.Namespace) -> int:
    from selfref_tui.agent.turn.loop import Agent
    from selfref_tui.selfref.reference import ReadOnlyReference, SelfReference

    config = app_config(args)
    store = ReadOnlyReference(SelfReference(config.data_dir, source=config.data_dir_source))
    # a mistyped --key showed an empty conversation's request and exited 0
    key = key_of(args) if getattr(args, "key", None) is None else existing_key(store, args)
    memory = store_notes(store.open(key))  # what loading found (skipped damaged records), once
    settings = getattr(memory, "settings", None)
    instructions = getattr(settings, "instructions", "")
    # The model the next request goes to: the flags', else the one the conversation chose,
    # else the config's; with nothing configured (and no flag), the demo model's: the app
    # offers only it.
    provider_config = conversation_provider(args, config, settings)
    only_demo = not provider_flagged(args) and nowhere_to_send(config, provider_config)
    if only_demo:
        # the conversation's own choice waits, as in the app; a --context-window still holds
        window_flag = config.provider.context_window if getattr(args, "context_window", None) \
            else None
        provider_config = demo_provider("")
        if window_flag:
            provider_config = replace(provider_config, context_window=window_flag,
                                      window_source="flag")
    if provider_config.demo and not provider_config.base_url:
        # nothing to ask: the demo's window is known, and no demo server is started
        provider_config = replace(provider_config, base_url="http://127.0.0.1:9/v1")
    rewound = memory.rewound_count
    window = run_async(_cached_window(provider_config, config))
    agent = Agent(store, _Shown(provider_config), config.agent,
                  model=provider_config.model, context_window=window)
    _load_encoder(agent, provider_config.model)
    plan = agent.preview_request(key)
    run_async(agent.aclose())
    store.close()
    messages, tokens = plan.messages, plan.tokens
    if args.json:
        print_json({"model": provider_config.model, "messages": messages, "tools": plan.tools,
                    "tokens": tokens, "window": window, "rewound": rewound,
                    "instructions": instructions,
                    "breakdown": plan.breakdown.parts if plan.breakdown else {},
                    "auto_compaction": {
                        "ratio": config.agent.auto_compact_ratio if plan.compacts_at else 0,
                        "at": plan.compacts_at, "asked": plan.compaction_asked,
                        "next": plan.compaction}})
        return EXIT_OK
    names = ", ".join(str((t.get("function") or {}).get("name", "?")) for t in plan.tools)
    estimate = "~" if plan.estimated else ""
    say(f"model {provider_config.model} · {_count(len(messages), 'message')} · "
        f"{_count(len(plan.tools), 'tool')} "
        f"· {estimate}{tokens} tokens of {window}"
        + (" (an estimate: messages and tool schemas, counted here)" if plan.estimated else ""))
    if only_demo:
        say("no model provider is configured: this is the request the offline demo model would "
            "get (the app offers it); set OPENAI_API_KEY or OPENAI_BASE_URL, or give --profile "
            "or --base-url, to see the request another model would get")
    if plan.left_out:
        say(f"{_count(plan.left_out, 'oldest message')} "
            f"{'is' if plan.left_out == 1 else 'are'} left out of this request (still "
            "stored): it no longer fits the window")
    if rewound:
        say(f"{_count(rewound, 'message')} {'was' if rewound == 1 else 'were'} rewound out "
            "of this context (still stored: "
            "`selfref-tui history --all`; `selfref-tui rewind --undo` brings the last back)")
    if plan.tools_total > len(plan.tools):
        say(f"window too small for the full tool set: this request offers "
            f"{len(plan.tools)} of {plan.tools_total} tools")
    if plan.breakdown is not None:
        say("where the tokens go:")
        for line in plan.breakdown.lines():
            say(f"  {line}")
    say(f"auto-compaction: {plan.compaction}")
    say(f"tools: {names or 'none'}")
    if instructions:
        first = instructions.splitlines()[0]
        say(f"instructions (this conversation's, in the system prompt [0]): {first[:100]}"
            + ("…" if len(instructions) > len(first[:100]) else ""))
    for index, message in enumerate(messages):
        say(f"\n── [{index}] {message.get('role')}"
            + (f" (tool_call_id {message['tool_call_id']})" if "tool_call_id" in message
                else ""))
        if message.get("content"):
            from selfref_tui.context.images import readable

            say(readable(message["content"]))
        for call in message.get("tool_calls") or ():
            fn = call.get("function", {})
            say(f"→ {fn.get('name')}({fn.get('arguments')})  [{call.get('id')}]")
    return EXIT_OK


def _load_encoder(agent: Any, model: str) -> None:
    """Exact token counts for a one-shot command (the app loads this off its start-up path)."""
    try:
        from selfref_tui.selfref.encodings import load_encoder
    except ImportError:
        return
    try:
        agent.tokens.set_encoder(load_encoder(model))
    except Exception:  # an estimate is still a useful answer
        return


def register(commands: Any) -> None:
    ctx = add_group(commands, "context", "what the model sees")
    p = add_command(ctx, "show", "the exact provider messages the next call would send, on "
                    "the model it would go to: the flags', else the one the conversation chose "
                    "(/model, /profile), else the configured one; with none configured, the "
                    "offline demo model's (the demo is never a conversation's choice)")
    common_flags(p)
    provider_flags(p)
    p.add_argument("--json", action="store_true",
                   # spaces after the commas: the help is wrapped at spaces, not inside a name
                   help='{"model", "messages":[...], "tools":[...], "tokens":N, "window":N, '
                        '"rewound":N, "instructions":"...", "breakdown":{"system_prompt", '
                        '"experiences", "tool_schemas", "summary", "messages", "images"} '
                        '(adding up to tokens), "auto_compaction":{"ratio", "at", "asked", '
                        '"next"}}')
    p.set_defaults(handler=_context_show)


def _count(n: int, noun: str) -> str:
    """``1 message``, ``3 messages``: a new conversation's request read "1 messages"."""
    return f"{n} {noun}{'' if n == 1 else 's'}"
