"""One chat window's runtime without a screen: ``controller`` (``ChatController``, what the
app asks), ``startup`` (building and closing the runtime), ``key_lifecycle`` (the key on
screen) and ``refusals`` (what the person is told when something cannot be done).

Sits on top of the runtime: may import all of ``agent``; nothing in ``agent`` imports it.
The UI imports it (``ChatController``, ``Refused``).
"""
