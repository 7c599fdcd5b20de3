"""Facts about the CRMArena benchmark's original org that several tests check against."""

from __future__ import annotations

from typing import Any

# Record counts of the CRMArena dump (crmarena_data.db), 41,081 rows in all.
CRMARENA_COUNTS = {
    "User": 152,
    "Account": 201,
    "Contact": 208,
    "Case": 977,
    "Knowledge__kav": 45,
    "ProductCategory": 12,
    "Product2": 501,
    "ProductCategoryProduct": 762,
    "Pricebook2": 46,
    "PricebookEntry": 22000,
    "Order": 2069,
    "OrderItem": 7100,
    "EmailMessage": 3241,
    "LiveChatTranscript": 774,
    "Issue__c": 10,
    "CaseHistory__c": 2983,
}


# The SOQL the CRMArena tool functions send (crmarena.md section 6.2), with a real org's values
# filled in by `tool_queries`. Datetimes are unquoted literals, as the tools write them.
TOOL_QUERY_TEMPLATES = {
    "get_agent_handled_cases_by_period": (
        "SELECT NewValue__c, CreatedDate FROM CaseHistory__c WHERE CreatedDate >= {start} "
        "AND CreatedDate <= {end} AND Field__c = 'Owner Assignment'"
    ),
    "get_cases": (
        "SELECT OwnerId, CreatedDate, ClosedDate, AccountId FROM Case WHERE CreatedDate >= "
        "{start} AND CreatedDate < {end} AND OwnerId IN ({agents}) AND Status IN ('Closed')"
    ),
    "get_cases_single_values": (
        "SELECT OwnerId, CreatedDate, ClosedDate, AccountId FROM Case WHERE "
        "IssueId__c = '{issue}' AND Status = 'Closed'"
    ),
    "get_non_transferred_case_ids": (
        "SELECT CaseId__c FROM CaseHistory__c WHERE Field__c = 'Owner Assignment' AND "
        "CreatedDate >= {start} AND CreatedDate <= {end} GROUP BY CaseId__c HAVING COUNT(Id) = 1"
    ),
    "get_agent_transferred_cases_by_period": (
        "SELECT OldValue__c, CreatedDate FROM CaseHistory__c WHERE Field__c = 'Owner Assignment' "
        "AND OldValue__c != NULL AND CreatedDate >= {start} AND CreatedDate <= {end}"
    ),
    "get_shipping_state": "SELECT Id, ShippingState FROM Account WHERE Id IN ({accounts})",
    "get_order_item_ids_by_product": "SELECT Id FROM OrderItem WHERE Product2Id = '{product}'",
    "get_issue_counts": (
        "SELECT IssueId__c, COUNT(Id) IssueCount FROM Case WHERE OrderItemId__c IN ({items}) "
        "AND CreatedDate >= {start} AND CreatedDate <= {end} GROUP BY IssueId__c "
        "ORDER BY COUNT(Id) DESC"
    ),
    "get_account_id_by_contact_id": "SELECT AccountId FROM Contact WHERE Id = '{contact}' LIMIT 1",
    "get_purchase_history": (
        "SELECT Product2Id FROM OrderItem WHERE OrderItem.Order.AccountId = '{account}' AND "
        "OrderItem.Order.EffectiveDate = {purchase_date} AND Product2Id IN ({products}) AND "
        "OrderItem.Order.Status = 'Activated'"
    ),
    "get_issues": "SELECT Id, Name FROM Issue__c",
    "get_livechat_transcript_by_case_id": (
        "SELECT Body, EndTime FROM LiveChatTranscript WHERE CaseId = '{case}'"
    ),
    "get_email_messages_by_case_id": (
        "SELECT Subject, TextBody, FromAddress, ToAddress, MessageDate FROM EmailMessage "
        "WHERE ParentId = '{case}'"
    ),
}

PERIOD_START = "2023-01-01T00:00:00Z"
PERIOD_END = "2023-07-01T00:00:00Z"


def _quoted(ids: list[str]) -> str:
    return ", ".join(f"'{value}'" for value in ids)


def tool_query_values(rows: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    """Realistic arguments for the tool queries, picked from the org's own records."""
    cases = rows["Case"]
    in_period = [c for c in cases if "2023-01" <= c["CreatedDate"].isoformat()[:7] <= "2023-06"]
    agents = sorted({c["OwnerId"] for c in in_period})[:3]
    item = rows["OrderItem"][0]
    product = item["Product2Id"]
    items = [i["Id"] for i in rows["OrderItem"] if i["Product2Id"] == product]
    order = next(o for o in rows["Order"] if o["Status"] == "Activated")
    order_products = [i["Product2Id"] for i in rows["OrderItem"] if i["OrderId"] == order["Id"]]
    chat_case = rows["LiveChatTranscript"][0]["CaseId"]
    return {
        "start": PERIOD_START,
        "end": PERIOD_END,
        "agents": _quoted(agents),
        "issue": rows["Issue__c"][0]["Id"],
        "accounts": _quoted([a["Id"] for a in rows["Account"][:5]]),
        "product": product,
        "items": _quoted(items),
        # The tools pass ids as they got them; a 15-character one must work too.
        "contact": rows["Contact"][3]["Id"][:15],
        "account": order["AccountId"],
        "purchase_date": order["EffectiveDate"].isoformat(),
        "products": _quoted([*order_products, rows["Product2"][-1]["Id"]]),
        "case": chat_case,
    }


def tool_queries(rows: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    values = tool_query_values(rows)
    return {name: template.format(**values) for name, template in TOOL_QUERY_TEMPLATES.items()}
