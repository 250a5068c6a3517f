#!/usr/bin/env python3
"""Build the cudalab lab report; run with --help for the options."""

import sys

from cudalab.build import main

if __name__ == "__main__":
    sys.exit(main())
