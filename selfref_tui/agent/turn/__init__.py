"""One turn of the runtime: compile, stream, run tools, commit; and the input router.

``loop`` (``Agent``) holds the state and runs the turn; its other jobs are mixins, one
module each: ``planning`` (the next request), ``llm_step`` (one streamed call),
``tool_run`` (one message's tool calls), ``bookkeeping`` (per key). The units it uses:
``state`` (``TurnState``), ``stream`` (assembling one call), ``compaction`` and ``overflow``
(what the next request carries and whether it fits), ``compile_cache``, ``questions``,
``inbox`` (messages typed mid-turn), ``forks`` (child agents) and ``router``
(``AgentInputRouter``, the person's way in).

May import ``agent.tools`` and the shared vocabulary (``events``, ``abort``,
``protocols``). From ``agent.provider`` only its vocabulary (``chunks``, ``errors``):
the client itself comes in as a ``protocols.ProviderLike``. Never ``agent.chat``.
"""
