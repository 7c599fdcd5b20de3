"""Sandboxes: isolated, resettable copies of an org's data, one per agent episode."""
