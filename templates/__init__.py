"""Package data, not code: the Jinja2 templates every generated file comes from.

Kept at the repository top and installed as `pypto.templates` (setup.py maps it); code
finds it through `pypto.resources`, never through the checkout's layout.
"""
