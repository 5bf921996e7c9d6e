"""IR → source text, only through the Jinja2 templates in `templates/`."""

from .cpp import generate
from .sources import GeneratedSources, KernelSource, ParamSpec

__all__ = ["generate", "GeneratedSources", "KernelSource", "ParamSpec"]
