"""Where gw leans on uvicorn's and Litestar's internals, and nowhere else.

gw runs on uvicorn's httptools protocol and Litestar's app, and patches both where a
measurement or a missing bound asked for it. Every patch is here, small, saying why it
exists and which internal it relies on. uvicorn and Litestar are pinned to the tested
versions (pyproject.toml); tests/unit/server/runtime/test_internals.py fails, naming the
patch to revisit, when an internal changes. Only this package imports uvicorn, and it
imports nothing else of gw.server (import-linter).

- ``protocol.py``: the one server protocol uvicorn runs: header-read deadline, head size
  bound, JSON errors for what is not HTTP, hang-up notice, direct body writes, WebSocket
  refusal.
- ``closing_response.py``: the bytes of a refusal the protocol writes itself.
- ``disconnect.py``: a request's work cancelled when its client hangs up.
- ``direct_body.py``: a response body written from a callback (uvicorn's response cycle).
- ``sse_stream.py``: the streaming response, in the request's own task (a subclass of
  Litestar's ``ASGIStreamingResponse``).
- ``fast_path.py``: the SDKs' inference POSTs, past Litestar's routing.
- ``litestar_app.py``: Litestar without its pydantic and attrs plugins.
- ``server.py``: uvicorn's config, and a server that exits 0 after a SIGTERM drain.
"""
