"""What finding quoted refs costs an answer as it streams in: prints figures, asserts nothing.

    python bench/quote_scan_bench.py [--kb 1000] [--chunk 16]

An answer of prose and code full of ``<`` (comparisons, HTML), with a quoted ref
now and then, is fed in chunks of ``--chunk`` characters, as a provider's deltas
come: to the quotation scanner alone (``refs/quoted.py``), and to a transcript
answer (``AnswerItem.feed``: the ref parser, the scanner and the block splitter).
Printed: seconds of CPU per MB of answer for each (CPU time, since the machine
may be shared; wall time beside it), and the scanner's share of the whole.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from selfref_tui.refs.quoted import QuoteScanner
from selfref_tui.ui.transcript.answer import AnswerItem

UNIT = (
    "Some prose where a < b, and <b>markup</b> shown as text.\n\n"
    "```python\nif a < b:\n    xs = [i for i in ys if i<3]\n```\n\n"
)
QUOTE = '<quoted_ref id="plan">\nstep one, step two\n</quoted_ref>\n\n'


def answer_text(kb: int) -> str:
    parts, size, n = [], 0, 0
    while size < kb * 1000:
        part = QUOTE if n % 20 == 19 else UNIT
        parts.append(part)
        size += len(part)
        n += 1
    return "".join(parts)


def timed(feed, text: str, chunk: int) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    for at in range(0, len(text), chunk):
        feed(text[at: at + chunk])
    return time.process_time() - cpu, time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", type=int, default=1000)
    parser.add_argument("--chunk", type=int, default=16)
    args = parser.parse_args()
    text = answer_text(args.kb)
    mb = len(text) / 1e6
    scan_cpu, scan_wall = timed(QuoteScanner().feed, text, args.chunk)
    feed_cpu, feed_wall = timed(AnswerItem().feed, text, args.chunk)
    print(f"answer: {len(text):,} characters, {text.count('<'):,} '<', "
          f"{text.count('<quoted_ref'):,} quoted refs, chunks of {args.chunk}")
    print(f"scanner alone:       {scan_cpu / mb:.3f} s CPU per MB ({scan_wall / mb:.3f} s wall)")
    print(f"AnswerItem.feed:     {feed_cpu / mb:.3f} s CPU per MB ({feed_wall / mb:.3f} s wall)")
    print(f"scanner's share:     {scan_cpu / feed_cpu:.0%}")


if __name__ == "__main__":
    main()
