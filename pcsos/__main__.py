import sys

from pcsos.cli import main

sys.exit(main())
