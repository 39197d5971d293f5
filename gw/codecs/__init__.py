"""Codecs: one module per wire format, both directions, sans I/O."""
