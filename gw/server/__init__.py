"""The HTTP server: Litestar on uvicorn, thin handlers; everything else is handed in by wiring.

Three rooms, and what they share:

- ``inference/``: the API clients call (``/v1``, Gemini's ``/v1beta``): one request flow
  (``ingress.py``) under every client format, and the background Responses jobs.
- ``admin/``: the admin plane (``/admin/v1``), ``/metrics`` and the dashboard.
- ``runtime/``: the only place gw leans on uvicorn's and Litestar's internals (the one
  server protocol, the fast path, the streaming response), each patch saying why.
- Here: the app's assembly (``app.py``), auth, admission, the services handed to the
  handlers, request bodies, error pages and the response headers both planes carry.

The inference API and the admin plane import nothing of each other (import-linter).
"""
