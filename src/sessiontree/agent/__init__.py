"""The agent host's engine: a model provider, the client's tools, and the turn loop that
runs them over a ``Session`` (what ``sessiontree chat`` runs and agent builders copy)."""
