"""gw: a local-first LLM gateway."""

__version__ = "0.1.0"
