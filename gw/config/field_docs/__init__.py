"""What each config section and field means, and which values it takes: the one source of
``gw config schema`` (gw/config/json_schema.py) and docs/reference/config.md
(gw/config/reference.py). Text is Markdown (backticks for keys and values).

Every Struct reachable from ``Config`` has a ``Section`` in ``SECTIONS`` and every field a
``Field`` (tests/unit/config/test_field_docs.py fails on one without). A field's value rules
(``minimum``, ``text``, ...) restate, for editors, checks that validate.py makes; only those,
since the JSON Schema must accept every config gw loads.
"""

from gw.config.field_docs.gateway import GATEWAY_SECTIONS
from gw.config.field_docs.policies import POLICY_SECTIONS
from gw.config.field_docs.rules import Field, Section, Text
from gw.config.field_docs.upstreams import UPSTREAM_SECTIONS

SECTIONS: dict[type, Section] = {**GATEWAY_SECTIONS, **UPSTREAM_SECTIONS, **POLICY_SECTIONS}

__all__ = ["SECTIONS", "Field", "Section", "Text"]
