"""Product categories, products, price books and price book entries.

Latent variables drawn here: each product's popularity (how often it is ordered), case
propensity (how often it breaks or disappoints), seasonal peak months and dominant issue.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, time
from itertools import accumulate
from random import Random
from typing import Any

from app.seeding import common
from app.seeding.generate.records import ORG_CREATED, Record, record_id
from app.seeding.generate.text import fill, load_text

PRODUCT_COUNT = 501
CATEGORY_LINK_COUNT = 762
PRICEBOOK_COUNT = 46
ENTRY_COUNT = 22000
ACTIVE_SHARE = 0.94


@dataclass(frozen=True)
class Product(common.Product):
    list_price: float
    case_propensity: float
    plural: bool  # "Trail Running Shoes" are, "Yoga Mat" is
    sizes: tuple[str, ...]  # what a customer could order it in


@dataclass(frozen=True)
class Pricebook:
    index: int
    id: str
    valid_from: date | None  # None: always valid (the standard price book)
    valid_to: date | None
    final_sale: bool
    products: tuple[int, ...]  # product indexes, parallel to entry_ids and prices
    entry_ids: tuple[str, ...]
    prices: tuple[float, ...]
    cumulative_popularity: tuple[float, ...]  # for popularity-weighted picks

    def valid_on(self, day: date) -> bool:
        if self.valid_from is None or self.valid_to is None:
            return True
        return self.valid_from <= day <= self.valid_to


@dataclass
class Catalog:
    categories: list[dict[str, Any]]
    products: list[Product] = field(default_factory=list)
    pricebooks: list[Pricebook] = field(default_factory=list)
    records: dict[str, list[Record]] = field(default_factory=dict)


def _price(rng: Random, low: float, high: float) -> float:
    """A shelf price: mostly x.99, sometimes a round half-dollar."""
    value = rng.uniform(low, high)
    return round(round(value) - 0.01, 2) if rng.random() < 0.7 else round(value * 2) / 2


def _product_name(
    rng: Random, group: dict[str, Any], lines: list[str], used: set[str]
) -> tuple[str, bool]:
    """A new product name, and whether it is plural (its base noun is)."""
    while True:
        base, modifier, line = (
            rng.choice(group["bases"]),
            rng.choice(group["modifiers"]),
            rng.choice(lines),
        )
        name = rng.choices(
            [f"{modifier} {base}", f"{line} {base}", f"{line} {modifier} {base}"],
            weights=[0.45, 0.3, 0.25],
        )[0]
        if name not in used:
            used.add(name)
            return name, base.endswith("s")


def _description(rng: Random, name: str, group: dict[str, Any], text: dict[str, Any]) -> str:
    feature1, feature2 = rng.sample(group["features"], 2)
    context = {"name": name, "feature1": feature1, "feature2": feature2}
    sentence = fill(
        rng.choice(text["description_templates"]), context | {"use": rng.choice(group["uses"])}
    )
    return f"{sentence} {rng.choice(text['description_closers'])}".strip()


def build_catalog(rng: Random, issue_names: list[str]) -> Catalog:
    text = load_text("catalog")
    categories: list[dict[str, Any]] = text["categories"]
    catalog = Catalog(categories=categories)
    catalog.records["ProductCategory"] = [
        {
            "Id": record_id("ProductCategory", n + 1),
            "Name": category["name"],
            "CatalogId": common.CATALOG_ID,
            "Description": category["description"],
            "CreatedDate": ORG_CREATED,
        }
        for n, category in enumerate(categories)
    ]
    # Every category gets an equal share; the remainder goes to randomly chosen ones.
    share, extra = divmod(PRODUCT_COUNT, len(categories))
    lucky = set(rng.sample(range(len(categories)), extra))
    slots = [c for c in range(len(categories)) for _ in range(share + (c in lucky))]
    rng.shuffle(slots)
    products: list[Record] = []
    used: set[str] = set()
    for index, category_index in enumerate(slots):
        category = categories[category_index]
        # Groups with more base nouns hold more of the category's products.
        group = rng.choices(
            category["groups"], weights=[len(g["bases"]) for g in category["groups"]]
        )[0]
        name, plural = _product_name(rng, group, text["lines"], used)
        affinity: dict[str, float] = category["issue_affinity"]
        catalog.products.append(
            Product(
                index=index,
                id=record_id("Product2", index + 1),
                name=name,
                category=category_index,
                list_price=_price(rng, *group["price"]),
                popularity=min(rng.paretovariate(1.4), 25.0),
                case_propensity=rng.lognormvariate(0.0, 0.5),
                peak_months=frozenset([*category["peak_months"], rng.randint(1, 12)]),
                dominant_issue=rng.choices(
                    issue_names, weights=[1.0 + affinity.get(i, 0) for i in issue_names]
                )[0],
                plural=plural,
                sizes=tuple(str(size) for size in group["sizes"]),
            )
        )
        products.append(
            {
                "Id": catalog.products[-1].id,
                "Name": name,
                "ProductCode": f"{category['code']}-{index + 1:04d}",
                "Description": _description(rng, name, group, text),
                "Family": category["family"],
                "IsActive": rng.random() < ACTIVE_SHARE,
                "External_ID__c": f"{category['name']}_{index + 1}",
                "CreatedDate": ORG_CREATED,
            }
        )
    catalog.records["Product2"] = products
    catalog.records["ProductCategoryProduct"] = _category_links(rng, catalog)
    _add_pricebooks(rng, catalog, text)
    return catalog


def _category_links(rng: Random, catalog: Catalog) -> list[Record]:
    """Each product in its own category, and some cross-listed in a related one."""
    by_name = {c["name"]: n for n, c in enumerate(catalog.categories)}
    cross_listed = set(rng.sample(range(PRODUCT_COUNT), CATEGORY_LINK_COUNT - PRODUCT_COUNT))
    links: list[Record] = []
    for product in catalog.products:
        homes = [product.category]
        if product.index in cross_listed:
            related = catalog.categories[product.category]["related"]
            homes.append(by_name[rng.choice(related)])
        for category in homes:
            links.append(
                {
                    "Id": record_id("ProductCategoryProduct", len(links) + 1),
                    "ProductCategoryId": record_id("ProductCategory", category + 1),
                    "ProductId": product.id,
                    "CreatedDate": ORG_CREATED,
                }
            )
    return links


def _add_pricebooks(rng: Random, catalog: Catalog, text: dict[str, Any]) -> None:
    standard = text["standard_pricebook"]
    books: list[Record] = [
        {
            "Id": record_id("Pricebook2", 1),
            "Name": standard["name"],
            "Description": standard["description"],
            "IsActive": True,
            "IsStandard": True,
            "ValidFrom": None,
            "ValidTo": None,
            "CreatedDate": ORG_CREATED,
        }
    ]
    entries: list[Record] = []
    # The standard book lists every product at its list price.
    everything = list(range(PRODUCT_COUNT))
    list_prices = [product.list_price for product in catalog.products]
    _add_book(catalog, entries, books[0]["Id"], None, everything, list_prices)
    plans: list[tuple[date, date, dict[str, Any], str]] = []
    for year in text["pricebook_years"]:
        for kind in text["pricebook_kinds"]:
            start = date.fromisoformat(f"{year}-{kind['start']}")
            end_year = year + 1 if kind.get("end_next_year") else year
            plans.append((start, date.fromisoformat(f"{end_year}-{kind['end']}"), kind, str(year)))
    plans.sort(key=lambda plan: (plan[0], plan[1]))
    if len(plans) != PRICEBOOK_COUNT - 1:
        raise ValueError(f"catalog.yaml makes {len(plans)} price books, need {PRICEBOOK_COUNT - 1}")
    # The other books share the remaining entries evenly, each a random subset of products.
    size, extra = divmod(ENTRY_COUNT - PRODUCT_COUNT, len(plans))
    bigger = set(rng.sample(range(len(plans)), extra))
    for n, (start, end, kind, year) in enumerate(plans):
        book = {
            "Id": record_id("Pricebook2", n + 2),
            "Name": fill(kind["name"], {"year": year}),
            "Description": kind["description"],
            "IsActive": True,
            "ValidFrom": datetime.combine(start, time(0, 0)),
            "ValidTo": datetime.combine(end, time(23, 59, 59)),
            "CreatedDate": ORG_CREATED,
        }
        books.append(book)
        chosen = sorted(rng.sample(everything, size + (n in bigger)))
        low, high = kind["discount"]
        prices = [round(list_prices[i] * rng.uniform(low, high), 2) for i in chosen]
        window = (start, end, bool(kind.get("final_sale")))
        _add_book(catalog, entries, book["Id"], window, chosen, prices)
    catalog.records["Pricebook2"] = books
    catalog.records["PricebookEntry"] = entries


def _add_book(
    catalog: Catalog,
    entries: list[Record],
    book_id: str,
    window: tuple[date, date, bool] | None,  # valid from, valid to, final sale
    products: list[int],
    prices: list[float],
) -> None:
    ids = []
    for index, price in zip(products, prices, strict=True):
        product = catalog.products[index]
        ids.append(record_id("PricebookEntry", len(entries) + 1))
        entries.append(
            {
                "Id": ids[-1],
                "Name": product.name,
                "Pricebook2Id": book_id,
                "Product2Id": product.id,
                "UnitPrice": price,
                "IsActive": True,
                "CreatedDate": ORG_CREATED,
            }
        )
    catalog.pricebooks.append(
        Pricebook(
            index=len(catalog.pricebooks),
            id=book_id,
            valid_from=window[0] if window else None,
            valid_to=window[1] if window else None,
            final_sale=window[2] if window else False,
            products=tuple(products),
            entry_ids=tuple(ids),
            prices=tuple(prices),
            cumulative_popularity=tuple(
                accumulate(catalog.products[i].popularity for i in products)
            ),
        )
    )
