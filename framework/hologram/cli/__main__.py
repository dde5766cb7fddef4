"""`python -m hologram.cli`: the same as the `hologram` console script."""

import sys

from hologram.cli import main

sys.exit(main())
