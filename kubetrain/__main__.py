"""``python -m kubetrain`` runs the command line."""

from kubetrain.cli import main

raise SystemExit(main.main())
