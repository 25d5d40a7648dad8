"""``python -m p4reduce.worker`` (see worker/cli.py)."""
import sys

from .cli import main

sys.exit(main())
