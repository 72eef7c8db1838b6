"""``python -m urbex.cli``: the ``urbex`` console script."""

import sys

from urbex.cli import main

if __name__ == "__main__":
    sys.exit(main())
