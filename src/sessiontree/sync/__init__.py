"""Pushing a config root into the store (``sessiontree sync``)."""
