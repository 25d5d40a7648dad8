"""`python -m p4reduce.controller ...` (see controller/cli.py)."""
import sys

from p4reduce.controller.cli import main

sys.exit(main())
