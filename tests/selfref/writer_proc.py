"""A separate writer process for the store tests (kill -9 and lock tests).

Run as ``python writer_proc.py <data_dir> <key> loop|hold``. It reports on
stdout only after a call has returned, so the parent knows what was committed.
"""

from __future__ import annotations

import sys
import time

from selfref_tui.context.mutations import AssistantMessageMutation, UserMessageMutation
from selfref_tui.selfref import SelfReference


def turn(i: int) -> list:
    # Sizes vary so some writes span many pages and a kill can land mid-write.
    size = (i * 7919) % 150_000
    return [
        UserMessageMutation({"role": "user", "content": f"turn {i} " + "u" * size}),
        AssistantMessageMutation(content=f"answer {i}"),
    ]


def main() -> None:
    data_dir, key, mode = sys.argv[1:4]
    store = SelfReference(data_dir)
    memory = store.open(key)
    print("ready", flush=True)
    if mode == "hold":
        sys.stdin.read()  # hold the lock until the parent closes our stdin
        store.close()
        return
    i = memory.message_count // 2
    while True:
        memory.commit(turn(i))
        print(f"committed {i}", flush=True)
        i += 1
        if i % 50 == 0:
            time.sleep(0)


if __name__ == "__main__":
    main()
