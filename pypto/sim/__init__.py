"""The host simulator's C++ model of the PTO tile ISA (headers under include/)."""

from pathlib import Path

INCLUDE_DIR = Path(__file__).resolve().parent / "include"
