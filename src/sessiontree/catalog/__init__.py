"""Finding sessions: the listing and its cache (:mod:`.index`), what a ``SESSION`` argument,
``-c`` and ``-r`` name (:mod:`.resolve`), and search over every record (:mod:`.search`)."""
