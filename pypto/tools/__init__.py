"""Command-line tools; `pypto.tools.cli:main` is the `pypto` console script."""
