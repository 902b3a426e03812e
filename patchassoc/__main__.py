"""``python -m patchassoc`` is the ``patchassoc`` command."""
import sys

from .simulations.cli import main

sys.exit(main())
