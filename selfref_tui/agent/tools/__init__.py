"""The model's tools: ``builtin`` (handlers of the built-in tools), ``schemas`` (their JSON
schemas), ``history_recall`` (the search index the history tools share), ``batch``
(``ToolBatch``: one message's calls on a task group; ``ToolSource``, the seam for tools
from elsewhere) and ``offer`` (which tools a request offers when the window is small).

Imports nothing from ``agent.turn``, ``agent.chat`` or ``agent.provider``.
"""
