"""The task types of the CRMArena-Pro orgs, b2b and b2c (crmarena.md 5.2)."""
