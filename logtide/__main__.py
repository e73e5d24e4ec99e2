"""``python -m logtide``: the ``logtide`` command."""

import sys

from logtide.cli import main

sys.exit(main())
