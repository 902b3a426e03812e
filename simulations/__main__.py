"""``python -m simulations`` is the ``patchassoc`` command."""
import sys

from .cli import main

sys.exit(main())
