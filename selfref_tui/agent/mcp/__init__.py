"""MCP: tools from Model Context Protocol servers, offered to the model as its own.

``manager`` starts the configured servers (stdio subprocesses or streamable HTTP)
in the background and keeps their tool lists; ``naming`` turns server and tool
names into the ``mcp__<server>__<tool>`` names the model sees; ``results`` maps
what a server returns into text, tool errors and image messages. Only the
manager (its ``server_runs``) imports the ``mcp`` SDK, and only when it starts, so
importing this package costs nothing on the app's first frame.
"""
