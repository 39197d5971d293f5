"""Where gw leans on uvicorn's and Litestar's internals.

gw lives on uvicorn's httptools protocol and Litestar's app, and patches both where a
measurement or a missing bound demanded it: the server protocol's mixins (protocol.py,
closing_response.py, direct_body.py, disconnect.py), the fast path past Litestar's
routing (fast_path.py), the streaming response (sse_stream.py) and the server's exit
(server.py).
"""
