"""The Anthropic Messages wire format, both directions, sans I/O.

Client side (``POST /v1/messages``): ``client_*`` modules. Upstream side (an ``anthropic``
provider): ``upstream_*`` modules.
"""
