"""The shipped kernel library: one spec module per kernel family (see docs/building.md).

Modules whose name starts with an underscore are helpers that specs import, not specs.
"""
