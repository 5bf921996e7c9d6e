"""Ecosystem command names for pypto's tools (`python -m simpler_setup.tools.<tool>`)."""
