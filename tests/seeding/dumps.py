"""Small dumps in the CRMArena layout, made by the tests (the real ones are CC BY-NC and are
never shipped): one SQLite table per sObject, named by its API name, field API names as
columns, live-org style 18-character ids, and the dumps' quirks: phones stored as REAL,
Quantity and UnitPrice as TEXT, checkboxes as 1/0, datetimes as text with a +0000 offset, dates
as YYYY-MM-DD, EmailMessage.ToIds as a JSON array string, and OrderItem's column spelled
PriceBookEntryId.

A test takes `original_dump()` (or `pro_dump()`), changes what it needs (a value, a column, a
table) and writes it with `write_dump`.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.storage.ids import to_18


def sf_id(prefix: str, number: int) -> str:
    """An id shaped like the live org's (pod Ws), e.g. 500Ws0000001xYzIAI."""
    return to_18(f"{prefix}Ws00000{number:02d}xYz")


USER_1, USER_2 = sf_id("005", 1), sf_id("005", 2)
ACCOUNT_1, ACCOUNT_2 = sf_id("001", 1), sf_id("001", 2)
CONTACT_1, CONTACT_2 = sf_id("003", 1), sf_id("003", 2)
CASE_1, CASE_2 = sf_id("500", 1), sf_id("500", 2)
ARTICLE_1, ARTICLE_2 = sf_id("ka0", 1), sf_id("ka0", 2)
CATEGORY_1 = sf_id("0ZG", 1)
PRODUCT_1, PRODUCT_2 = sf_id("01t", 1), sf_id("01t", 2)
CATEGORY_PRODUCT_1, CATEGORY_PRODUCT_2 = sf_id("0ZH", 1), sf_id("0ZH", 2)
STANDARD_BOOK, SUMMER_BOOK = sf_id("01s", 1), sf_id("01s", 2)
ENTRY_1, ENTRY_2 = sf_id("01u", 1), sf_id("01u", 2)
ORDER_1 = sf_id("801", 1)
ORDER_ITEM_1, ORDER_ITEM_2 = sf_id("802", 1), sf_id("802", 2)
EMAIL_1, EMAIL_2 = sf_id("02s", 1), sf_id("02s", 2)
CHAT_1 = sf_id("570", 1)
ISSUE_1, ISSUE_2 = sf_id("a1M", 1), sf_id("a1M", 2)
HISTORY_1, HISTORY_2, HISTORY_3 = sf_id("a1N", 1), sf_id("a1N", 2), sf_id("a1N", 3)
RECORD_TYPE = sf_id("012", 1)
CATALOG = sf_id("0ZS", 1)
VISITOR = sf_id("571", 1)


@dataclass
class DumpTable:
    """One table: columns as (name, SQLite declared type), rows in column order."""

    columns: list[tuple[str, str]]
    rows: list[list[Any]] = field(default_factory=list)

    def index(self, column: str) -> int:
        return [name for name, _ in self.columns].index(column)

    def set(self, row: int, column: str, value: Any) -> None:
        self.rows[row][self.index(column)] = value

    def get(self, row: int, column: str) -> Any:
        return self.rows[row][self.index(column)]

    def add_column(self, column: str, declared: str, values: list[Any]) -> None:
        self.columns.append((column, declared))
        for row, value in zip(self.rows, values, strict=True):
            row.append(value)

    def drop_column(self, column: str) -> None:
        position = self.index(column)
        del self.columns[position]
        for row in self.rows:
            del row[position]


Dump = dict[str, DumpTable]


def _table(spec: str, *rows: list[Any]) -> DumpTable:
    """`spec` is "Name TYPE, Name TYPE, ..."."""
    columns = [tuple(part.split()) for part in spec.split(",")]
    return DumpTable(columns=[(name, kind) for name, kind in columns], rows=[list(r) for r in rows])


def original_dump() -> Dump:
    """The original CRMArena org's 16 tables, a few rows each."""
    return {
        "User": _table(
            "Id TEXT, FirstName TEXT, LastName TEXT, Email TEXT, Phone REAL, Username TEXT, "
            "Alias TEXT, LanguageLocaleKey TEXT, EmailEncodingKey TEXT, TimeZoneSidKey TEXT, "
            "LocaleSidKey TEXT",
            [USER_1, "Ava", "Stone", "ava@shoes.example", 5551234567.0, "ava@shoes.example",
             "astone", "en_US", "UTF-8", "America/Los_Angeles", "en_US"],
            [USER_2, "Ben", "Okafor", "ben@shoes.example", None, "ben@shoes.example", "bokafor",
             "en_US", "UTF-8", "America/New_York", "en_US"],
        ),
        "Account": _table(
            "Id TEXT, FirstName TEXT, LastName TEXT, PersonEmail TEXT, Phone REAL, "
            "RecordTypeId TEXT, ShippingCity TEXT, ShippingState TEXT",
            [ACCOUNT_1, "Cleo", "Park", "cleo@mail.example", 4155550100.0, RECORD_TYPE,
             "Austin", "TX"],
            [ACCOUNT_2, "Dev", "Rao", "dev@mail.example", None, RECORD_TYPE, "Boise", "ID"],
        ),
        "Contact": _table(
            "Id TEXT, FirstName TEXT, LastName TEXT, Email TEXT, AccountId TEXT, OwnerId TEXT",
            [CONTACT_1, "Cleo", "Park", "cleo@mail.example", ACCOUNT_1, USER_1],
            [CONTACT_2, "Dev", "Rao", "dev@mail.example", ACCOUNT_2, USER_2],
        ),
        "Case": _table(
            "Id TEXT, Priority TEXT, Subject TEXT, Description TEXT, Status TEXT, "
            "ContactId TEXT, CreatedDate TEXT, ClosedDate TEXT, OrderItemId__c TEXT, "
            "IssueId__c TEXT, AccountId TEXT, OwnerId TEXT",
            [CASE_1, "High", "Sole came apart", "The sole of my running shoe came apart.",
             "Closed", CONTACT_1, "2020-12-22T11:00:00.000+0000", "2020-12-22T13:30:00.000+0000",
             ORDER_ITEM_1, ISSUE_1, ACCOUNT_1, USER_1],
            [CASE_2, "Low", "Where is my order?", "", "New", CONTACT_2,
             "2024-05-26T08:15:00.000+0000", None, ORDER_ITEM_2, ISSUE_2, ACCOUNT_2, USER_2],
        ),
        "Knowledge__kav": _table(
            "Id TEXT, Title TEXT, FAQ_Answer__c TEXT, Summary TEXT, UrlName TEXT",
            [ARTICLE_1, "Return Policy", "Returns within 30 days &amp; unworn.",
             "How returns work", "1726808617-k4dmx"],
            [ARTICLE_2, "Shoe Care", "Air dry &amp; brush.", "Caring for shoes",
             "1726808618-p2qzr"],
        ),
        "ProductCategory": _table(
            "Id TEXT, Name TEXT, CatalogId TEXT", [CATEGORY_1, "Running Shoes", CATALOG]
        ),
        "Product2": _table(
            "Id TEXT, Name TEXT, Description TEXT, IsActive INTEGER, External_ID__c TEXT",
            [PRODUCT_1, "Trail Runner X", "A trail running shoe", 1, "Running Shoes_131"],
            [PRODUCT_2, "Court Classic", "A retired tennis shoe", 0, "Tennis Shoes_7"],
        ),
        "ProductCategoryProduct": _table(
            "Id TEXT, ProductCategoryId TEXT, ProductId TEXT",
            [CATEGORY_PRODUCT_1, CATEGORY_1, PRODUCT_1],
            [CATEGORY_PRODUCT_2, CATEGORY_1, PRODUCT_2],
        ),
        "Pricebook2": _table(
            "Id TEXT, Name TEXT, Description TEXT, IsActive INTEGER, ValidFrom TEXT, ValidTo TEXT",
            [STANDARD_BOOK, "Standard Price Book", "The standard book", 1, None, None],
            [SUMMER_BOOK, "Summer Sale 2020", "Summer prices", 0,
             "2020-06-01T00:00:00.000+0000", "2020-08-31T23:59:59.000+0000"],
        ),
        "PricebookEntry": _table(
            "Id TEXT, Pricebook2Id TEXT, Product2Id TEXT, UnitPrice TEXT",
            [ENTRY_1, STANDARD_BOOK, PRODUCT_1, "22.5"],
            [ENTRY_2, STANDARD_BOOK, PRODUCT_2, "89"],
        ),
        "Order": _table(
            "Id TEXT, AccountId TEXT, Status TEXT, EffectiveDate TEXT, Pricebook2Id TEXT",
            [ORDER_1, ACCOUNT_1, "Activated", "2020-12-20", STANDARD_BOOK],
        ),
        "OrderItem": _table(
            "Id TEXT, OrderId TEXT, Product2Id TEXT, Quantity TEXT, UnitPrice TEXT, "
            "PriceBookEntryId TEXT",
            [ORDER_ITEM_1, ORDER_1, PRODUCT_1, "1.0", "22.5", ENTRY_1],
            [ORDER_ITEM_2, ORDER_1, PRODUCT_2, "2", "89", ENTRY_2],
        ),
        "EmailMessage": _table(
            "Id TEXT, Subject TEXT, TextBody TEXT, ParentId TEXT, FromAddress TEXT, ToIds TEXT, "
            "MessageDate TEXT",
            [EMAIL_1, "Re: Sole came apart", "We are sorry to hear that.", CASE_1,
             "cleo@mail.example", f'["{USER_1}"]', "2020-12-22T11:05:00.000+0000"],
            [EMAIL_2, "Your order", "It ships today.", CASE_2, "ben@shoes.example",
             f'["{CONTACT_2}", "{USER_1}"]', "2024-05-26T09:00:00.000+0000"],
        ),
        "LiveChatTranscript": _table(
            "Id TEXT, CaseId TEXT, AccountId TEXT, OwnerId TEXT, Body TEXT, EndTime TEXT, "
            "LiveChatVisitorId TEXT, ContactId TEXT",
            [CHAT_1, CASE_1, ACCOUNT_1, USER_1,
             "[2020-12-22T11:03:45] Cleo Park (Customer): my sole came apart",
             "2020-12-22T11:20:00.000+0000", VISITOR, CONTACT_1],
        ),
        "Issue__c": _table(
            "Id TEXT, Name TEXT", [ISSUE_1, "Product Defect"], [ISSUE_2, "Shipping Delay"]
        ),
        "CaseHistory__c": _table(
            "Id TEXT, CaseId__c TEXT, OldValue__c TEXT, NewValue__c TEXT, CreatedDate TEXT, "
            "Field__c TEXT",
            [HISTORY_1, CASE_1, None, None, "2020-12-22T11:00:00.000+0000", "Case Creation"],
            [HISTORY_2, CASE_1, None, USER_1, "2020-12-22T11:01:10.000+0000",
             "Owner Assignment"],
            [HISTORY_3, CASE_1, None, None, "2020-12-22T13:30:00.000+0000", "Case Closed"],
        ),
    }  # fmt: skip


OPPORTUNITY_1 = sf_id("006", 1)
LEAD_1 = sf_id("00Q", 1)
CONTRACT_1 = sf_id("800", 1)
TERRITORY_1 = sf_id("0MI", 1)


def b2b_dump() -> Dump:
    """A CRMArena-Pro (B2B) dump: the original tables as B2B has them, plus the sales objects."""
    tables = original_dump()
    tables["Account"] = _table(
        "Id TEXT, Name TEXT, Phone TEXT, Industry TEXT, Description TEXT, "
        "NumberOfEmployees INTEGER, ShippingState TEXT",
        [ACCOUNT_1, "Acme Fitness", "(415) 555-0100", "Retail", "Gyms", 250, "CA"],
        [ACCOUNT_2, "Boise Outfitters", "208-555-0199", "Retail", "Stores", 40, "ID"],
    )
    tables["Contact"].drop_column("OwnerId")
    tables["Issue__c"].add_column("Description__c", "TEXT", ["Broken on arrival", "Late"])
    tables["Order"].add_column("OwnerId", "TEXT", [USER_1])
    tables["Opportunity"] = _table(
        "Id TEXT, Name TEXT, Description TEXT, StageName TEXT, Amount TEXT, Probability TEXT, "
        "CloseDate TEXT, CreatedDate TEXT, AccountId TEXT, ContactId TEXT, OwnerId TEXT, "
        "ContractID__c TEXT",
        [OPPORTUNITY_1, "Acme treadmills", "Fifty treadmills", "Negotiation", "125000.0",
         "75", "2024-09-30", "2024-05-01T10:00:00.000+0000", ACCOUNT_1, CONTACT_1, USER_1,
         CONTRACT_1],
    )  # fmt: skip
    tables["Contract"] = _table(
        "Id TEXT, AccountId TEXT, Status TEXT, StartDate TEXT, CustomerSignedDate TEXT, "
        "CompanySignedDate TEXT, Description TEXT, ContractTerm INTEGER",
        [CONTRACT_1, ACCOUNT_1, "Activated", "2024-01-01", "2023-12-20", "2023-12-21",
         "Annual supply", 12],
    )  # fmt: skip
    tables["Lead"] = _table(
        "Id TEXT, FirstName TEXT, LastName TEXT, Email TEXT, Phone TEXT, Company TEXT, "
        "Title TEXT, Status TEXT, CreatedDate TEXT, IsConverted INTEGER, OwnerId TEXT",
        [LEAD_1, "Gia", "Lund", "gia@lead.example", "555-0101", "Lund Gyms", "Owner", "New",
         "2024-04-02T09:30:00.000+0000", 0, USER_2],
    )  # fmt: skip
    tables["Territory2"] = _table(
        "Id TEXT, Name TEXT, Description TEXT", [TERRITORY_1, "West", "CA,OR,WA"]
    )
    for name in (
        "OpportunityLineItem",
        "Quote",
        "QuoteLineItem",
        "VoiceCallTranscript__c",
        "Task",
        "Event",
        "UserTerritory2Association",
    ):
        tables[name] = _table("Id TEXT")
    tables["EmailMessage"].set(1, "ToIds", f'["{LEAD_1}"]')
    return tables


def b2c_dump() -> Dump:
    """A CRMArena-Pro B2C dump: person accounts, and fewer Contact, Contract and Lead columns."""
    tables = b2b_dump()
    tables["Account"] = _table(
        "Id TEXT, Name TEXT, FirstName TEXT, LastName TEXT, PersonEmail TEXT, Phone TEXT, "
        "Description TEXT, ShippingState TEXT",
        [ACCOUNT_1, "Cleo Park", "Cleo", "Park", "cleo@mail.example", "415-555-0100", "", "TX"],
        [ACCOUNT_2, "Dev Rao", "Dev", "Rao", "dev@mail.example", None, "Runner", "ID"],
    )
    tables["Contact"] = _table(
        "Id TEXT, AccountId TEXT", [CONTACT_1, ACCOUNT_1], [CONTACT_2, ACCOUNT_2]
    )
    tables["Contract"].drop_column("CompanySignedDate")
    tables["Lead"].drop_column("Company")
    tables["Lead"].drop_column("Title")
    return tables


def write_dump(path: Path, tables: Dump) -> Path:
    """Write `tables` as a SQLite file at `path`."""
    connection = sqlite3.connect(path)
    try:
        for name, table in tables.items():
            columns = ", ".join(f'"{column}" {kind}' for column, kind in table.columns)
            connection.execute(f'CREATE TABLE "{name}" ({columns})')
            marks = ", ".join("?" for _ in table.columns)
            connection.executemany(f'INSERT INTO "{name}" VALUES ({marks})', table.rows)
        connection.commit()
    finally:
        connection.close()
    return path
