"""The engine: the pieces of speculative decoding (WIP: the loop moves here next)."""
