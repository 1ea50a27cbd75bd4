"""``python3 -m frost``: the ``frost`` command line (:mod:`frost.cli`)."""

import sys

from frost.cli import main

sys.exit(main())
