"""Entry point: ``python -m supervisor --state-dir DIR``."""

import sys

from .daemon import main

sys.exit(main())
