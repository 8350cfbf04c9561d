"""The pure model: records, the tree and the context. No I/O, no clock, no environment."""
