"""ProductCategory, Product2, ProductCategoryProduct, Pricebook2 and PricebookEntry.

Every product has a primary category (its External_ID__c is "<category>_<n>") and, to reach
the org's ProductCategoryProduct count, some are also listed in a second category. The last
product of the catalog is retired: inactive and without a price, so it is in no deal.

Latent variables drawn here: each product's configuration rules (the largest quantity one
quote may hold, and a product it cannot be combined with), its popularity in deals, the issue
it most often causes, and the months its cases peak.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from random import Random
from typing import Any

from app.seeding import common
from app.seeding.generate.records import Record
from app.seeding.generate.text import load_text
from app.seeding.pro.profile import ORG_CREATED, OrgProfile


@dataclass(frozen=True)
class Product(common.Product):
    price: float
    entry_id: str | None  # the standard price book entry; None for the retired product
    max_quantity: int  # configuration rule: at most this many on one quote
    excludes: int | None  # configuration rule: never on one quote with this product


@dataclass
class Catalog:
    categories: list[dict[str, Any]]
    products: list[Product]
    standard_pricebook_id: str
    records: dict[str, list[Record]] = field(default_factory=dict)

    @property
    def sellable(self) -> list[Product]:
        return [p for p in self.products if p.entry_id is not None]


def build_catalog(rng: Random, profile: OrgProfile, issue_names: list[str]) -> Catalog:
    text = load_text("catalog", profile.org)
    categories: list[dict[str, Any]] = text["categories"]
    specs = [(c, spec) for c, category in enumerate(categories) for spec in category["products"]]
    if (
        len(specs) != profile.counts["Product2"]
        or len(categories) != profile.counts["ProductCategory"]
    ):
        raise ValueError(f"{profile.org} catalog.yaml does not match the org's counts")
    _, high_q = profile.quantity_range
    drafts: list[dict[str, Any]] = []
    for index, (c, spec) in enumerate(specs):
        low, high = spec["price"]
        drafts.append(
            {
                "index": index,
                "category": c,
                "spec": spec,
                "price": round(rng.uniform(low, high) / 5) * 5 - 0.01 * (high < 100),
                "max_quantity": rng.randint(max(2, high_q // 2), high_q * 2),
                "popularity": rng.lognormvariate(0.0, 0.5),
                "dominant_issue": rng.choice(issue_names),
                "peak_months": tuple(sorted(rng.sample(range(1, 13), 2))),
            }
        )
    sellable = len(specs) - 1
    # Exclusion rules pair products of different categories (e.g. two incompatible systems).
    excludes: dict[int, int] = {}
    order = rng.sample(range(sellable), sellable)
    for a, b in zip(order[0::2], order[1::2], strict=False):
        if drafts[a]["category"] != drafts[b]["category"] and rng.random() < 0.5:
            excludes[a], excludes[b] = b, a
    standard_id = profile.id("Pricebook2", 1)
    products = [
        Product(
            index=d["index"],
            id=profile.id("Product2", d["index"] + 1),
            name=d["spec"]["name"],
            category=d["category"],
            price=round(d["price"], 2),
            entry_id=profile.id("PricebookEntry", d["index"] + 1)
            if d["index"] < sellable
            else None,
            max_quantity=d["max_quantity"],
            excludes=excludes.get(d["index"]),
            popularity=d["popularity"],
            dominant_issue=d["dominant_issue"],
            peak_months=d["peak_months"],
        )
        for d in drafts
    ]
    catalog = Catalog(categories=categories, products=products, standard_pricebook_id=standard_id)
    _records(rng, profile, catalog, text)
    return catalog


def _records(rng: Random, profile: OrgProfile, catalog: Catalog, text: dict[str, Any]) -> None:
    categories = [
        {
            "Id": profile.id("ProductCategory", n + 1),
            "Name": category["name"],
            "Description": category["description"],
            "CatalogId": common.CATALOG_ID,
            "CreatedDate": ORG_CREATED,
        }
        for n, category in enumerate(catalog.categories)
    ]
    numbers: dict[int, int] = {}
    products: list[Record] = []
    for product in catalog.products:
        numbers[product.category] = numbers.get(product.category, 0) + 1
        category = catalog.categories[product.category]
        spec = category["products"][numbers[product.category] - 1]
        products.append(
            {
                "Id": product.id,
                "Name": product.name,
                "ProductCode": f"{category['code']}-{100 + numbers[product.category] * 7}",
                "Description": spec["description"],
                "Family": "None",
                "IsActive": product.entry_id is not None,
                "External_ID__c": f"{category['name']}_{product.index + 1}",
                "CreatedDate": ORG_CREATED,
            }
        )
    # Primary listings, then cross-listings in a second category until the count is reached.
    listings = [(p.category, p.index) for p in catalog.products]
    extra = profile.counts["ProductCategoryProduct"] - len(listings)
    cross = rng.sample(range(len(catalog.products)), extra)
    for index in sorted(cross):
        others = [
            c for c in range(len(catalog.categories)) if c != catalog.products[index].category
        ]
        listings.append((rng.choice(others), index))
    listings.sort()
    junctions = [
        {
            "Id": profile.id("ProductCategoryProduct", n + 1),
            "ProductCategoryId": categories[c]["Id"],
            "ProductId": catalog.products[p].id,
            "CreatedDate": ORG_CREATED,
        }
        for n, (c, p) in enumerate(listings)
    ]
    books: list[dict[str, Any]] = text["pricebooks"]
    pricebooks = [
        {
            "Id": profile.id("Pricebook2", n + 1),
            "Name": book["name"],
            "Description": book["description"],
            "IsActive": bool(book["active"]),
            "IsStandard": n == 0,
            "ValidFrom": datetime.fromisoformat(book["valid_from"])
            if book.get("valid_from")
            else None,
            "ValidTo": datetime.fromisoformat(book["valid_to"]) if book.get("valid_to") else None,
            "CreatedDate": ORG_CREATED,
        }
        for n, book in enumerate(books)
    ]
    entries = [
        {
            "Id": product.entry_id,
            "Name": product.name,
            "Pricebook2Id": catalog.standard_pricebook_id,
            "Product2Id": product.id,
            "UnitPrice": product.price,
            "IsActive": True,
            "CreatedDate": ORG_CREATED,
        }
        for product in catalog.sellable
    ]
    catalog.records = {
        "ProductCategory": categories,
        "Product2": products,
        "ProductCategoryProduct": junctions,
        "Pricebook2": pricebooks,
        "PricebookEntry": entries,
    }
