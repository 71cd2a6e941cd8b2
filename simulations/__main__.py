"""Entry point of `python -m simulations`."""

import sys

from .cli import main

sys.exit(main())
