"""`python -m lab.bench`: see bench/cli.py."""
import sys

from lab.bench.cli import main

sys.exit(main())
