"""Execution: run a RouteDecision with retry, fallback and time budgets, against ports only."""
