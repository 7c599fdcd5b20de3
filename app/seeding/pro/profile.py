"""What differs between the CRMArena-Pro orgs, as data: record counts, the sales motion's
shape, pricing and approval rules, and which fields each org has.

B2B sells equipment and software to companies (business accounts with many contacts); B2C sells
consumer goods to people (person accounts, one contact each). Everything else in the generator
reads these numbers instead of branching on the org's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from random import Random

from app.seeding.generate.records import child_rng, record_id

# The org timeline, shared by both Pro orgs: set up in March 2020, selling from July 2020, and
# "now" (the last day anything happens) is 31 October 2024. Open pipeline is recent; closed
# business spreads over the four years, so Pro-style questions about any quarter of 2021-2024
# have data to look at.
ORG_CREATED = datetime(2020, 3, 2, 16, 0)
FIRST_DAY = date(2020, 7, 1)
LAST_DAY = date(2024, 10, 31)
NOW = datetime(2024, 10, 31, 23, 0)

STAGES = ("Qualification", "Discovery", "Quote", "Negotiation", "Closed")
STAGE_PROBABILITY = {"Qualification": 10.0, "Discovery": 25.0, "Quote": 50.0, "Negotiation": 75.0}

# Objects the schema references but does not define: ids get the standard prefixes.
TERRITORY_MODEL_PREFIX, TERRITORY_TYPE_PREFIX = "0MA", "0M5"
VISITOR_PREFIX, ARTICLE_MASTER_PREFIX = "571", "kA0"


# Record counts of the published Pro orgs (CRMArena-Pro, Table 6), b2b then b2c. The junction
# objects ProductCategoryProduct and UserTerritory2Association are not in the table.
COUNTS: dict[str, tuple[int, int]] = {
    "User": (212, 212), "Territory2": (10, 10), "UserTerritory2Association": (150, 150),
    "Account": (101, 200), "Contact": (886, 200), "Lead": (1465, 222), "Issue__c": (15, 15),
    "Knowledge__kav": (194, 110), "ProductCategory": (10, 5), "Product2": (51, 51),
    "ProductCategoryProduct": (100, 51), "Pricebook2": (2, 2), "PricebookEntry": (50, 50),
    "Opportunity": (1170, 2292), "OpportunityLineItem": (4926, 11913), "Quote": (704, 1379),
    "QuoteLineItem": (2966, 7107), "Contract": (163, 329), "Order": (163, 329),
    "OrderItem": (689, 1649), "Task": (4829, 9007), "Event": (172, 148),
    "VoiceCallTranscript__c": (4033, 6796), "EmailMessage": (5686, 11403), "Case": (153, 289),
    "CaseHistory__c": (393, 741), "LiveChatTranscript": (58, 110),
}  # fmt: skip
ORGS = ("b2b", "b2c")  # the column order of COUNTS


def org_counts(org: str) -> dict[str, int]:
    """The exact record count per sObject of one Pro org."""
    column = ORGS.index(org)
    return {name: pair[column] for name, pair in COUNTS.items()}


@dataclass(frozen=True, kw_only=True)
class OrgProfile:
    org: str
    business: bool  # business accounts with several contacts (B2B) or person accounts (B2C)
    # Opportunities by outcome: won (one Contract and Order each), lost, and open by stage.
    opportunity_mix: dict[str, int]
    lost_after_quote: float = 0.5  # share of lost deals that got as far as a quote
    max_lines: int  # opportunity line items per deal
    quantity_range: tuple[int, int]
    sales_cycle_days: tuple[int, int]  # creation to close of a won deal, before agent factors
    # Quote approval rules (a knowledge article states them): a quote whose largest line
    # discount is above `auto_approve_discount` needs a manager review; above
    # `max_discount` it must be rejected.
    auto_approve_discount: float
    max_discount: float
    quote_validity_days: int
    lead_conversion: float  # mean lead conversion rate; agents and territories vary around it
    lead_calls: int  # VoiceCallTranscript__c rows about leads; the rest are about deals
    case_emails: int  # EmailMessage rows about cases; the rest are about deals
    # Fixed by the published counts: each case has a creation and an assignment history row,
    # a transfer and a closing one more (b2b: 393 = 2 x 153 + 17 + 70).
    closed_cases: int
    case_transfers: int
    # Injected inconsistencies the Pro policy and text tasks look for: enough of each that a
    # split's 100 tasks of a type keep near Pro's share of None answers (a fifth), although
    # their records are drawn again and again while the compliant ones are not.
    approval_violations: int  # quotes approved although their discount breaks the rules
    config_violations: int  # quotes whose lines break a product's configuration rules
    wrong_stages: int  # open deals whose StageName lags or leads what the activity shows
    stray_tasks: int  # 'Not Started' tasks that belong to another stage than the deal's
    case_violations: int  # cases resolved against a knowledge article

    @property
    def counts(self) -> dict[str, int]:
        return org_counts(self.org)

    # Head counts follow from the record counts: users are 1 administrator + sales agents +
    # service agents, and each sales agent has one territory association.
    @property
    def sales_agents(self) -> int:
        return self.counts["UserTerritory2Association"]

    @property
    def service_agents(self) -> int:
        return self.counts["User"] - 1 - self.sales_agents

    @property
    def chats(self) -> int:  # every chat transcript is about a case
        return self.counts["LiveChatTranscript"]

    def rng(self, seed: int, stream: str) -> Random:
        return child_rng(seed, stream, self.org)

    def id(self, sobject: str, ordinal: int) -> str:
        return record_id(sobject, ordinal, self.org)


B2B = OrgProfile(
    org="b2b",
    business=True,
    opportunity_mix={
        "Won": 163,
        "Lost": 287,
        "Negotiation": 160,
        "Quote": 190,
        "Discovery": 180,
        "Qualification": 190,
    },
    max_lines=10,
    quantity_range=(1, 40),
    sales_cycle_days=(45, 150),
    auto_approve_discount=10.0,
    max_discount=25.0,
    quote_validity_days=30,
    lead_conversion=0.29,
    lead_calls=1180,
    case_emails=459,
    closed_cases=70,
    case_transfers=17,
    approval_violations=150,
    config_violations=170,
    wrong_stages=220,
    stray_tasks=300,
    case_violations=55,
)

B2C = OrgProfile(
    org="b2c",
    business=False,
    opportunity_mix={
        "Won": 329,
        "Lost": 560,
        "Negotiation": 300,
        "Quote": 390,
        "Discovery": 350,
        "Qualification": 363,
    },
    max_lines=11,
    quantity_range=(1, 4),
    sales_cycle_days=(14, 60),
    auto_approve_discount=5.0,
    max_discount=15.0,
    quote_validity_days=14,
    lead_conversion=0.32,
    lead_calls=260,
    case_emails=867,
    closed_cases=133,
    case_transfers=30,
    approval_violations=300,
    config_violations=200,
    wrong_stages=300,
    stray_tasks=200,
    case_violations=95,
)

PROFILES = {profile.org: profile for profile in (B2B, B2C)}
