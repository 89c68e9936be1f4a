import sys

from mesa_dilemmas.cli import main

sys.exit(main())
