"""pypto: an ahead-of-time build system for PTO tile kernels, with a host simulator."""

__version__ = "0.1.0"
