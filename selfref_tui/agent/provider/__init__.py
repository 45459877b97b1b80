"""The model server connection: one streamed chat completion at a time.

``client`` (``Provider``) sends the request and reads the stream; ``chunks`` holds the
typed chunks it yields; ``errors`` the one-line ``ProviderError`` and how the server's
refusals map to it; ``hosts`` what a base URL names; ``sse``, ``delta_scan``,
``rechunk`` and ``think`` read the response body fast; ``window`` learns the model's
context window.

Imports nothing from ``agent.turn``, ``agent.tools``, ``agent.chat`` or ``agent.mcp``:
the turn loop depends on the provider, never the other way round.
"""
