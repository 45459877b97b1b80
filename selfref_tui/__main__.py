from selfref_tui.cli import main

raise SystemExit(main())
