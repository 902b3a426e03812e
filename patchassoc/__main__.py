"""``python -m patchassoc`` is the ``patchassoc`` command."""
import sys

from patchassoc.cli.main import main

sys.exit(main())
