import sys

from coverage_core.cli import main

sys.exit(main())
