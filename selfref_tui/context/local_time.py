"""Stored times as people read them: in the machine's time zone (``TZ`` respected).

The store writes ISO 8601 with an offset (UTC); that stays what ``--json``
and the files carry. Whatever shows a time to a person — ``history``,
``search`` and ``keys list`` text, the rewind picker, the conversation
switcher, an exported conversation's headings — passes it through here, so
"10:02" is the hour on the person's clock, not Greenwich's.
"""

from __future__ import annotations

from datetime import datetime

#: date and minute, the shape of most listings
MINUTE = "%Y-%m-%d %H:%M"
#: to the second
SECOND = "%Y-%m-%d %H:%M:%S"
#: to the second with the zone's name (a file read elsewhere says which clock)
SECOND_ZONE = "%Y-%m-%d %H:%M:%S %Z"


def shown_time(stamp: str, form: str = MINUTE) -> str:
    """``stamp`` (ISO 8601) in the local zone, as ``form`` (strftime) says.

    A stamp without an offset is shown as written (whose clock it was is not
    known); one that is not a time at all comes back cut short, never an error.
    """
    try:
        when = datetime.fromisoformat(stamp)
    except (TypeError, ValueError):
        return str(stamp)[:40]
    if when.tzinfo is not None:
        when = when.astimezone()
    elif "%Z" in form:
        form = form.replace(" %Z", "").replace("%Z", "")
    return when.strftime(form)
