"""``python -m rainforest ...``: the command line (see :mod:`rainforest.cli`)."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
