"""`python -m p4reduce.bench`: see bench/cli.py."""
import sys

from p4reduce.bench.cli import main

sys.exit(main())
