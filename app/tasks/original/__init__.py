"""The task types of CRMArena's original org (crmarena.md 5.1), one module per persona."""
