"""The model's tools: ``builtin`` (schemas and handlers of the built-in tools), ``batch``
(``ToolBatch``: one message's calls on a task group; ``ToolSource``, the seam for tools
from elsewhere) and ``offer`` (which tools a request offers when the window is small).

Imports nothing from ``agent.turn``, ``agent.chat`` or ``agent.provider``.
"""
