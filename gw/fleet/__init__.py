"""What a fleet of gateways shares beyond the state store, through Redis
(``state.redis_url``): limits, leases and budgets, and circuit breakers. Imported only when
a Redis URL is set."""
