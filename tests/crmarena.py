"""Facts about the CRMArena benchmark's original org that several tests check against."""

from __future__ import annotations

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
