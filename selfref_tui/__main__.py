from selfref_tui.cli import run

raise SystemExit(run())
