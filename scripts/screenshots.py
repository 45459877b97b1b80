"""Re-make the SVG screenshots in ``screenshots/`` (shown in the README).

    .venv/bin/python scripts/screenshots.py [--out DIR]

Drives the real app headless against the offline demo model (the demo server
inside the package, over real HTTP), exactly as a person would with keys, and
saves one SVG per state. The store lives in a temporary directory, so your own
memory keys are neither read nor touched.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from selfref_tui.config import AppConfig, ProviderConfig  # noqa: E402
from selfref_tui.demo.picture import sunset_png  # noqa: E402
from selfref_tui.ui.app import SelfRefApp  # noqa: E402

SIZE = (120, 40)


async def wait_until(pilot, predicate: Callable[[], object], what: str, timeout=30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"screenshots: timed out waiting for {what}")
        await pilot.pause(0.05)


def screen_name(app: SelfRefApp) -> str:
    return type(app.screen).__name__


def idle(app: SelfRefApp) -> bool:
    return (
        app.router is not None
        and not app.router.busy
        and not app._events
        and app.header.status in ("ready", "stopped")
    )


async def send(pilot, text: str) -> None:
    await pilot.press(*text)
    await pilot.press("enter")


async def settle(pilot) -> None:
    """Let notifications fade and animations end so the frame shows the state only."""
    pilot.app.clear_notifications()
    await pilot.wait_for_scheduled_animations()
    await pilot.pause(0.2)


def save(app: SelfRefApp, out: Path, name: str) -> None:
    path = out / f"{name}.svg"
    path.write_text(app.export_screenshot(title=f"selfref-tui — {name.replace('_', ' ')}"))
    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")


async def welcome(out: Path, data_dir: Path) -> None:
    app = SelfRefApp(AppConfig(data_dir=data_dir, unconfigured=True))
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: screen_name(app) == "WelcomeScreen", "welcome screen")
        await settle(pilot)
        save(app, out, "welcome")


async def tour(out: Path, data_dir: Path) -> None:
    """One demo session: remember, refs, export dialog, context, help, forks, Esc."""
    app = SelfRefApp(AppConfig(provider=ProviderConfig(demo=True), data_dir=data_dir))
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.ready and app.header.status == "ready", "start-up")
        await send(pilot, "remember that I like Python")
        await wait_until(pilot, lambda: idle(app) and app.sidebar.experience_list.experiences,
                         "an experience")
        await send(pilot, "show me some code")
        await wait_until(pilot, lambda: idle(app) and len(app.sidebar.ref_list.refs) == 3,
                         "three refs")
        await pilot.press("ctrl+up", "ctrl+up")  # highlight fib_iterative
        await settle(pilot)
        save(app, out, "chat_refs_sidebar")

        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: screen_name(app) == "ExportDialog", "export dialog")
        await settle(pilot)
        save(app, out, "export_dialog")
        await pilot.press("escape")

        await send(pilot, "/context")
        await wait_until(pilot, lambda: screen_name(app) == "ContextView", "context view")
        await settle(pilot)
        save(app, out, "context_view")
        await pilot.press("escape")

        await pilot.press("f1")
        await wait_until(pilot, lambda: screen_name(app) == "HelpScreen", "help screen")
        await settle(pilot)
        save(app, out, "help")
        await pilot.press("escape")
        await wait_until(pilot, lambda: screen_name(app) == "Screen", "back to chat")

        await send(pilot, "fork two helpers")
        panel = app.fork_panel
        await wait_until(
            pilot,
            lambda: idle(app)
            and len(panel.forks) == 2
            and all(f["status"] in ("completed", "done") for f in panel.forks),
            "two finished forks",
        )
        if not panel.display:  # it closes by itself once the forks are done: open it again
            await pilot.press("ctrl+t")
            await wait_until(pilot, lambda: panel.display, "the fork panel")
        await settle(pilot)
        save(app, out, "fork_panel")
        await pilot.press("ctrl+t")  # close the panel

        await send(pilot, "/key story")
        await wait_until(pilot, lambda: app.key == "story" and idle(app), "key switch")
        await send(pilot, "write something long")
        await wait_until(
            pilot,
            lambda: app.transcript.current is not None and len(app.transcript.current.text) > 700,
            "a part of the long answer",
        )
        await pilot.press("escape")
        await wait_until(pilot, lambda: idle(app) and app.header.status == "stopped", "abort")
        await settle(pilot)
        save(app, out, "interrupted")


async def rewound(out: Path, data_dir: Path) -> None:
    """Esc Esc: the rewind list, then the rewound section with the message back to edit."""
    app = SelfRefApp(AppConfig(provider=ProviderConfig(demo=True), data_dir=data_dir))
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.ready and app.header.status == "ready", "start-up")
        await send(pilot, "show me some code")
        await wait_until(pilot, lambda: idle(app) and len(app.sidebar.ref_list.refs) == 3,
                         "three refs")
        await send(pilot, "remember that I like Python")
        await wait_until(pilot, lambda: idle(app) and app.sidebar.experience_list.experiences,
                         "an experience")
        await pilot.press("escape", "escape")
        await wait_until(pilot, lambda: screen_name(app) != "Screen", "the rewind list")
        await settle(pilot)
        save(app, out, "rewind_list")
        await pilot.press("enter")
        await wait_until(pilot, lambda: idle(app) and app.transcript.items_of("rewound")
                         and app.chat_input.text, "the rewound section")
        await settle(pilot)
        save(app, out, "rewound")


async def images(out: Path, data_dir: Path) -> None:
    """/attach: the chip in the input, then the image block in the transcript."""
    (Path.cwd() / "sunset.png").write_bytes(sunset_png())
    app = SelfRefApp(AppConfig(provider=ProviderConfig(demo=True), data_dir=data_dir))
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.ready and app.header.status == "ready", "start-up")
        await send(pilot, "/attach sunset.png")
        await wait_until(pilot, lambda: app.chat_input.attached, "the chip")
        await pilot.press(*"what is in this picture?")
        await settle(pilot)
        save(app, out, "attach_chip")
        await pilot.press("enter")
        await wait_until(pilot, lambda: idle(app) and app.transcript.items_of("answer"),
                         "the answer")
        await pilot.press("ctrl+up", "ctrl+up")  # highlight the image: ctrl+s would export it
        await settle(pilot)
        save(app, out, "image_block")


async def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    # A neutral config path on the welcome screen and a fixed directory in the export dialog.
    os.environ["SELFREF_CONFIG"] = "/home/you/.config/selfref-tui/config.toml"
    project = Path(tempfile.gettempdir()) / "selfref-demo"
    project.mkdir(exist_ok=True)
    os.chdir(project)
    with tempfile.TemporaryDirectory(prefix="selfref-screenshots-") as tmp:
        await welcome(out, Path(tmp) / "welcome")
        await tour(out, Path(tmp) / "data")
        await images(out, Path(tmp) / "images")
        await rewound(out, Path(tmp) / "rewound")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "screenshots")
    args = parser.parse_args()
    asyncio.run(main(args.out.resolve()))
