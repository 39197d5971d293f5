"""The admin plane: the admin API (``/admin/v1``: health, usage, status, config, traces),
``GET /metrics``, and the dashboard at ``/`` with its logins and static files."""
