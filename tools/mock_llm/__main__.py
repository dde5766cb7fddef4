"""``python -m mock_llm`` (from tools/, as the benchmarks run it): the kit's ``python -m hologram.testing.mock_llm``."""

import sys

from hologram.testing.mock_llm.__main__ import main

sys.exit(main())
