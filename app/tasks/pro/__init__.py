"""The task types of the CRMArena-Pro orgs, b2b and b2c (crmarena.md 5.2)."""

# Pro's answer key gives about one task in five of a type the answer None (crmarena.md 4): the
# share of drawn tasks whose answer is None, in the types that ask whether something is wrong.
ABSTAIN_SHARE = 0.2
