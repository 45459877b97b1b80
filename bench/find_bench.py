"""Find in the app over a long conversation: prints figures, asserts nothing.

    python bench/find_bench.py [--messages N]

A transcript model (no screen) holds N stored messages, the older half
rewound, shown two ways: all loaded (the rewound half one section never
opened, searched as stored, unbuilt; the rest built items), and as a key
opens (the last 200 shown, the rest behind the "earlier messages" banner).
What is printed: how long ``find_hits`` takes to find every occurrence, for a
frequent word, a phrase and text that is nowhere; and how long ``line_marks`` takes to place
the occurrences on one drawn row of 40 lines (done once per row drawn while
the find bar is open); and how long a long pasted query that nearly matches takes
over a 100 KB run of one character (a near miss at every place). Times are
wall-clock; CPU time is printed beside them, since the machine may be shared.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from selfref_tui.ui.transcript.find import find_hits, line_marks, pattern
from selfref_tui.ui.transcript.reducer import TranscriptModel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    args = parser.parse_args()
    turns = args.messages // 2
    history: list[dict] = []
    for i in range(turns):
        rewound = i < turns // 2
        history += [
            {"role": "user", "content": f"question {i} about the day trip", "rewound": rewound},
            {"role": "assistant", "rewound": rewound,
             "content": f"Day {i % 7}: the train to Porto, then port wine. " * 4},
        ]
    print(f"{len(history):,} messages, {turns:,} of them rewound")
    for how, tail in (("all loaded", len(history)), ("as opened", 200)):
        model = TranscriptModel()
        model.load_history(history, numbers=list(range(1, len(history) + 1)), tail=tail)
        for query in ("porto", "day 3", "nowhere at all"):
            found = pattern(query)
            assert found is not None
            wall, cpu = time.perf_counter(), time.process_time()
            hits = find_hits(model.items, model.older, found)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            print(f"{how}: find {query!r}: {len(hits):,} hits in {wall * 1000:.0f} ms "
                  f"(cpu {cpu * 1000:.0f} ms)")
    row = [("Day 1: the train to Porto, then port wine. " * 2, False)] * 40
    found = pattern("port wine")
    assert found is not None
    runs = 1000
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(runs):
        line_marks(row, found)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"marks on a row of 40 drawn lines: {wall * 1000 / runs:.2f} ms "
          f"(cpu {cpu * 1000 / runs:.2f} ms)")
    near_misses()


#: 2,000 different characters in words of five
_many = " ".join("".join(chr(0x4E00 + i) for i in range(at, at + 5)) for at in range(0, 2_000, 5))


def near_misses() -> None:
    """A long pasted query that nearly matches, over a long run of one character: each
    place the text could start an occurrence is a near miss, the case whose cost
    grows with the text's length times the query's (what the find bar does on each
    key while it is open)."""
    run = "a" * 100_000
    cases = (
        ("one word", "a" * 3_000 + "b", run),
        ("one word, lines folded", "a" * 3_000 + "b", "\n".join(run[i:i + 80]
                                                                 for i in range(0, len(run), 80))),
        ("words", "a " * 1_500 + "b", "a " * 50_000),
        # the words glued somewhere, and nearly there at every place (1.1 s when each
        # place was tried in turn)
        ("words, the text also holding them glued", "a " * 1_500 + "b",
         "a " * 50_000 + "a" * 1_500 + "b"),
        # nearly there at every place, a word glued to the next every 1,400
        ("words, the text spaced unevenly", "a " * 1_500, ("a " * 1_400 + "aa ") * 36),
        # a long phrase that is there, 2,500 times
        ("a long phrase, there", "the train to porto, then port wine. day 1:",
         "Day 1: the train to Porto, then port wine. " * 2_500),
        # a pasted paragraph of 2,000 different characters, there once (9 s when every
        # place was matched at once: a mask of the text for each character)
        ("many different characters, there", _many, "一 丁 " * 50_000 + _many),
    )
    for name, query, text in cases:
        found = pattern(query)
        assert found is not None
        model = TranscriptModel()
        model.load_history([{"role": "user", "content": text}])
        wall, cpu = time.perf_counter(), time.process_time()
        hits = find_hits(model.items, model.older, found)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        print(f"near misses ({name}): a {len(query):,}-character query over "
              f"{len(text) // 1000} KB: {len(hits)} hits in {wall * 1000:.1f} ms "
              f"(cpu {cpu * 1000:.1f} ms)")


if __name__ == "__main__":
    main()
