"""One transcript and what is done to it: read it (:mod:`.transcript`), rewind (:mod:`.rewind`),
fork (:mod:`.fork`), summarize or compact (:mod:`.summarize`), and keep large tool results
beside it (:mod:`.spill`)."""
