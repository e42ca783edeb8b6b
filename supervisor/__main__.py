"""Entry point: ``python -m wave_bash.supervisor --state-dir DIR``."""

import sys

from .daemon import main

sys.exit(main())
