"""Provider adapters: wire codec x auth x transport, one per wire protocol."""
