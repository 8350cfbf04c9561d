"""``sessiontree daemon``: a warm process that runs the read-only commands for their
callers (:mod:`.client` hands a run over, :mod:`.server` forks a :mod:`.worker` for it)."""
