"""What several gateways share through Redis (``state.redis_url``): issue 26."""
