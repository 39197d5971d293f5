"""Provider adapters: wire codec x auth, one per wire protocol, over the upstream HTTP
client's ``HttpTransport`` (gw/upstream_http/)."""
