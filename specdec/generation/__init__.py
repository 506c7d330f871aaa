"""Generation: the public entry points, the default policy and the methods (WIP)."""
