"""Example gw plugins (docs/guides/plugins.md). Put this directory on PYTHONPATH."""
