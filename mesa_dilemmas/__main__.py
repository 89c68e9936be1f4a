"""``python -m mesa_dilemmas``: the command line."""

import sys

from mesa_dilemmas.cli import main

if __name__ == "__main__":  # importing the module (the API reference does) runs nothing
    sys.exit(main())
