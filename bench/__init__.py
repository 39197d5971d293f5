"""The gw benchmark: what gw adds on top of its upstream, measured on this machine.

Run it with ``scripts/bench`` (``python -m bench.run``); see ``bench.run`` for the flags.
Nothing here is imported by gw itself.
"""
