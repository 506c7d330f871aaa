"""`python -m specdec` runs the command line (see `specdec.cli`)."""

from specdec.cli import main

raise SystemExit(main())
