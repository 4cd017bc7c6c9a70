"""Clusters: their shape, the backends that make nodes, and the up/status/down lifecycle."""
