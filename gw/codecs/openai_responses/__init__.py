"""The OpenAI Responses API (``POST /v1/responses``), both ways: client_* for clients of
gw's Responses ingress, upstream_* for ``kind: openai_responses`` providers. The mapping
to the IR is described in each module; both sides share it."""
