"""The host simulator's C++ model of the PTO tile ISA (headers under include/)."""

from pypto.resources import sim_include_dir

INCLUDE_DIR = sim_include_dir()
