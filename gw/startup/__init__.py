"""The parts ``gw serve`` is assembled from, before and around the composition root
(gw/wiring.py): the plan, the start checks, telemetry consumers and config revisions."""
