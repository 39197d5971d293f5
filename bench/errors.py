"""The one error the benchmark raises for a step that cannot run; the run reports it."""


class BenchError(Exception):
    """A step could not run (a tool missing, a server that did not start, ...)."""
