"""The runtime: the network, concurrency and the turn loop; it never imports Textual.

Its parts, one subpackage each, and what each may import from the others:

- ``events``, ``abort``, ``protocols`` (top level): the shared vocabulary (the typed events
  the front ends read, the abort signal, what the loop needs from the store and the
  provider). They import nothing from the subpackages.
- ``provider/``: the model server connection (streaming, SSE, the context window). It
  imports nothing from ``turn/``, ``tools/``, ``chat/`` or ``mcp/``.
- ``tools/``: the built-in tools, the batch that runs one message's calls, and which tools
  a request offers. It imports nothing from ``turn/``, ``chat/`` or ``provider/``.
- ``turn/``: one turn (``Agent``), its units (stream assembly, compaction, overflow,
  questions, forks) and the input router. It imports ``tools/``, and from ``provider/``
  only its vocabulary (``chunks``, ``errors``): the client comes in through
  ``protocols.ProviderLike``.
- ``mcp/``: tools from MCP servers (a ``tools.batch.ToolSource``); imports ``tools/``.
- ``chat/``: one window's runtime without a screen (``ChatController``): it sits on top
  and may import all of the above.

The ``__init__`` modules hold docstrings only: importing a package never imports its
modules (start-up time is measured; ``tests/ui/test_lazy_import.py`` checks what the app's
first frame imports). ``tests/test_layers.py`` checks these rules.
"""
