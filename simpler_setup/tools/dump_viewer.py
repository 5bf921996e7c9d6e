"""`python -m simpler_setup.tools.dump_viewer [DIR] [-t TASK] [-s before|after]
[-r input|output|inout] [-a ARG] [-i INDEX] [-e]`: `pypto dump-viewer` under the name the
PyPTO ecosystem uses (see `pypto.tools.dump_viewer`)."""

from __future__ import annotations

import sys

from pypto.tools.dump_viewer import add_arguments, main, run

__all__ = ["add_arguments", "main", "run"]

if __name__ == "__main__":
    sys.exit(main())
