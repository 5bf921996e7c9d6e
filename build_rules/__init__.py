"""Package data, not code: the platform and backend definitions (TOML).

Kept at the repository top and installed as `pypto.build_rules` (setup.py maps it); code
finds it through `pypto.resources`, never through the checkout's layout.
"""
