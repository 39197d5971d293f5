"""Routing: a pure function from (request, snapshot, observed state) to a RouteDecision."""
