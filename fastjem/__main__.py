import sys

from fastjem.cli import main

sys.exit(main())
