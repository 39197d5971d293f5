"""The Litestar app: thin handlers for /v1; everything else is handed in by wiring."""
