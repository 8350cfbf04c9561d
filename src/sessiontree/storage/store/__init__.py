"""The store: every machine's sessions archived on PostgreSQL, byte for byte.

The only package that speaks SQL. Lines are kept verbatim (``bytea``), identified by
their file, its generation and their byte offset; beside each, what the engine's own
skeleton scan made of it, so a read from the store is the engine's two-phase read: the
skeletons of a transcript, then the lines a command needs.
"""
