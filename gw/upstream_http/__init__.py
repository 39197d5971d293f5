"""gw's HTTP client for upstreams: the ``HttpTransport`` port the adapters call, the
built-in HTTP/1.1 client behind it, the httpx client used through proxies, and what every
path shares (address checks, reply budgets, proxies from the environment)."""
