"""What a fleet of gateways shares beyond the state store: limits, leases and budgets in
Redis (``state.redis_url``). Imported only when a Redis URL is set."""
