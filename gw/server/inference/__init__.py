"""The inference API: ``/v1`` (OpenAI Chat Completions, Responses and embeddings, Anthropic
Messages, the model lists) and Google's ``/v1beta``, each a thin handler over one request
flow (``ingress.py``); the background Responses jobs and ``previous_response_id``."""
