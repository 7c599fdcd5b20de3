"""Orders and order items: what each customer bought, when, and from which price book.

Shopping habit (per customer) sets how many orders they place; product popularity sets what
goes into them; order dates peak around the holidays.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from random import Random

from app.seeding.generate.catalog import Catalog
from app.seeding.generate.people import People
from app.seeding.generate.records import Record, record_id
from app.seeding.generate.sampling import DaySampler, moment, spread

ORDER_COUNT = 2069
ITEM_COUNT = 7100
FIRST_ORDER_DAY = date(2019, 9, 2)
LAST_ORDER_DAY = date(2024, 5, 25)
DRAFT_SHARE = 0.06
MIN_ORDERS_PER_CUSTOMER = 3
MAX_ITEMS_PER_ORDER = 8
SHOPPING_MONTH_WEIGHTS = {
    1: 0.9, 2: 0.8, 3: 1.1, 4: 1.0, 5: 1.0, 6: 1.1,
    7: 1.0, 8: 1.1, 9: 0.9, 10: 1.0, 11: 1.6, 12: 2.0,
}  # fmt: skip
QUANTITIES = (1.0, 2.0, 3.0, 4.0)
QUANTITY_WEIGHTS = (0.75, 0.18, 0.05, 0.02)


@dataclass(frozen=True)
class Order:
    index: int
    id: str
    customer: int
    day: date
    pricebook: int
    activated: bool


@dataclass(frozen=True)
class OrderLine:
    index: int
    id: str
    order: int
    product: int
    unit_price: float
    quantity: float


@dataclass
class Orders:
    orders: list[Order] = field(default_factory=list)
    lines: list[OrderLine] = field(default_factory=list)
    records: dict[str, list[Record]] = field(default_factory=dict)


def build_orders(rng: Random, people: People, catalog: Catalog) -> Orders:
    customers = people.customers
    per_customer = spread(
        rng,
        ORDER_COUNT,
        [MIN_ORDERS_PER_CUSTOMER] * len(customers),
        [c.shopping_habit for c in customers],
        caps=40,
    )
    days = DaySampler(FIRST_ORDER_DAY, LAST_ORDER_DAY, lambda d: SHOPPING_MONTH_WEIGHTS[d.month])
    placed: list[tuple[datetime, int]] = []
    for shopper, count in zip(customers, per_customer, strict=True):
        # One order a day at most per customer, so "what I bought on <day>" is unambiguous.
        chosen: set[date] = set()
        while len(chosen) < count:
            chosen.update(days.sample(rng, count - len(chosen)))
        placed.extend((moment(rng, day), shopper.index) for day in sorted(chosen))
    placed.sort()
    result = Orders()
    order_records: list[Record] = []
    for index, (at, customer) in enumerate(placed):
        books = [b for b in catalog.pricebooks if b.valid_on(at.date())]
        # The standard list price is the most common; promotions take the rest.
        book = rng.choices(books, weights=[3.0 if b.index == 0 else 1.0 for b in books])[0]
        order = Order(
            index=index,
            id=record_id("Order", index + 1),
            customer=customer,
            day=at.date(),
            pricebook=book.index,
            activated=rng.random() >= DRAFT_SHARE,
        )
        result.orders.append(order)
        order_records.append(
            {
                "Id": order.id,
                "AccountId": customers[customer].account_id,
                "Pricebook2Id": book.id,
                "EffectiveDate": order.day,
                "Status": "Activated" if order.activated else "Draft",
                "OwnerId": people.admin_id,
                "CreatedDate": at,
            }
        )
    result.records["Order"] = order_records
    result.records["OrderItem"] = _add_lines(rng, result, catalog, [at for at, _ in placed])
    return result


def _add_lines(
    rng: Random, result: Orders, catalog: Catalog, placed_at: list[datetime]
) -> list[Record]:
    sizes = spread(
        rng, ITEM_COUNT, [1] * ORDER_COUNT, [1.0] * ORDER_COUNT, caps=MAX_ITEMS_PER_ORDER
    )
    records: list[Record] = []
    for order, size in zip(result.orders, sizes, strict=True):
        book = catalog.pricebooks[order.pricebook]
        positions: list[int] = []
        while len(positions) < size:
            position = rng.choices(
                range(len(book.products)), cum_weights=book.cumulative_popularity
            )[0]
            if position not in positions:
                positions.append(position)
        for position in positions:
            line = OrderLine(
                index=len(result.lines),
                id=record_id("OrderItem", len(result.lines) + 1),
                order=order.index,
                product=book.products[position],
                unit_price=book.prices[position],
                quantity=rng.choices(QUANTITIES, weights=QUANTITY_WEIGHTS)[0],
            )
            result.lines.append(line)
            records.append(
                {
                    "Id": line.id,
                    "OrderId": order.id,
                    "PricebookEntryId": book.entry_ids[position],
                    "Product2Id": catalog.products[line.product].id,
                    "Quantity": line.quantity,
                    "UnitPrice": line.unit_price,
                    "CreatedDate": placed_at[order.index],
                }
            )
    return records
