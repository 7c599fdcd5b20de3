"""Benchmark tasks over an org: CRMArena's task types drawn from the data with their ground
truth (computed by plain SQL), written as CRMArena's task rows."""
