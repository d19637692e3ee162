"""``python -m structlearn``: the command line (:mod:`structlearn.cli`)."""

import sys

from .cli import main

sys.exit(main())
