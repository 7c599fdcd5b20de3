"""CRMArena's function-calling tools (crmarena.md 6.2: the 25 of `tool_call`, and the two free
query tools of `tool_call_flex`), served as MCP tools with their names and arguments. Each
sends the query CRMArena's sends, through the connector's rules (SOSL for a text starting
FIND, else query_all; `attributes` dropped at the top level, columns null in every row
dropped, an error as "<errorCode>: <message>"), computes what CRMArena's computes, and returns
it as CRMArena's tool environment shows it to the model: `str()` of the result, "Error: ..."
strings included.
"""

from __future__ import annotations

import calendar
import functools
import inspect
from collections import defaultdict
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations

DATETIME = "%Y-%m-%dT%H:%M:%SZ"
RECORD_DATETIME = "%Y-%m-%dT%H:%M:%S.%f%z"
UNEXPECTED = "Error: An unexpected error occurred - {}"
SEASON_START = {"Spring": 3, "Summer": 6, "Fall": 9, "Winter": 12}
PERIOD_NAMES = [*calendar.month_name[1:], "Q1", "Q2", "Q3", "Q4", *SEASON_START]

# What the connector answers: the records, or an error's text, and 1 or 0.
RunQuery = Callable[[Context, str], Awaitable[tuple[Any, int]]]


def _parsed(text: str, pattern: str) -> datetime | None:
    try:
        return datetime.strptime(text, pattern)
    except ValueError:
        return None


def _months_before(moment: datetime, months: int) -> datetime:
    """`moment` less whole months, the day kept or clamped to the month's last (as dateutil's
    relativedelta does)."""
    index = moment.year * 12 + moment.month - 1 - months
    year, month = divmod(index, 12)
    day = min(moment.day, calendar.monthrange(year, month + 1)[1])
    return moment.replace(year=year, month=month + 1, day=day)


def _in_list(field: str, values: list[Any]) -> str:
    """CRMArena's filter on a list: `= 'x'` for one value, Python's tuple text for more."""
    return f"{field} = '{values[0]}'" if len(values) == 1 else f"{field} IN {tuple(values)}"


def _count_by_owner(cases: Any, extreme: Callable[[Any], Any]) -> Any:
    if not isinstance(cases, list):
        return "Error: Input 'subset_cases' must be a list"
    counts: dict[str, int] = {}
    for index, record in enumerate(cases):
        if not isinstance(record, dict):
            return f"Error: Item at index {index} in subset_cases is not a dictionary"
        if "OwnerId" not in record:
            return f"Error: 'OwnerId' not found in case record at index {index}"
        if not isinstance(record["OwnerId"], str):
            return f"Error: 'OwnerId' at index {index} is not a string"
        counts[record["OwnerId"]] = counts.get(record["OwnerId"], 0) + 1
    if not counts:
        return []
    best = extreme(counts.values())
    return [agent for agent, count in counts.items() if count == best]


def _find_by_value(values_by_id: Any, extreme: Callable[[Any], Any]) -> Any:
    if not isinstance(values_by_id, dict):
        return "Error: Input must be a dictionary"
    if not values_by_id:
        return None
    if not all(isinstance(value, int | float) for value in values_by_id.values()):
        return "Error: All values in the dictionary must be numeric"
    best = extreme(values_by_id.values())
    return [key for key, value in values_by_id.items() if value == best]


def calculate_average_handle_time(cases: list[dict[str, Any]]) -> Any:
    """Calculate the average handle time for each agent based on a list of cases."""
    if not isinstance(cases, list):
        return "Error: Input 'cases' must be a list"
    times: defaultdict[str, list[float]] = defaultdict(list)
    for index, case in enumerate(cases):
        if not isinstance(case, dict):
            return f"Error: Item at index {index} in cases is not a dictionary"
        for key in ("CreatedDate", "ClosedDate", "OwnerId"):
            if key not in case:
                return f"Error: '{key}' not found in case record at index {index}"
        created = _parsed(str(case["CreatedDate"]), RECORD_DATETIME)
        closed = _parsed(str(case["ClosedDate"]), RECORD_DATETIME)
        if created is None or closed is None:
            return (
                f"Error: Invalid date format at index {index}. "
                "Expected format: '%Y-%m-%dT%H:%M:%S.%f%z'"
            )
        if closed < created:
            return f"Error: ClosedDate is earlier than CreatedDate at index {index}"
        times[case["OwnerId"]].append((closed - created).total_seconds() / 60)
    return {agent: sum(spent) / len(spent) for agent, spent in times.items() if spent}


def get_start_date(end_date: str, period: str, interval_count: int) -> Any:
    """Calculate the start date based on the end date, period, and interval count."""
    if not isinstance(end_date, str):
        return "Error: end_date must be a string"
    if not isinstance(period, str):
        return "Error: period must be a string"
    if not isinstance(interval_count, int):
        return "Error: interval_count must be an integer"
    if period not in ("day", "week", "month", "quarter"):
        return "Error: Invalid period. Must be 'day', 'week', 'month', or 'quarter'"
    end = _parsed(end_date, DATETIME)
    if end is None:
        return "Error: Invalid end_date format. Expected format: 'YYYY-MM-DDTHH:MM:SSZ'"
    if interval_count < 0:
        return "Error: interval_count must be a non-negative integer"
    try:
        if period in ("day", "week"):
            start = end - timedelta(days=interval_count * (7 if period == "week" else 1))
        else:
            start = _months_before(end, interval_count * (3 if period == "quarter" else 1))
    except (ValueError, OverflowError) as error:  # before year 1
        return UNEXPECTED.format(error)
    return start.strftime(DATETIME)


def get_period(period_name: str, year: int) -> Any:
    """Calculate the start and end date based on the period name and year."""
    if not isinstance(period_name, str):
        return "Error: period_name must be a string"
    if not isinstance(year, int):
        return "Error: year must be an integer"
    if period_name not in PERIOD_NAMES:
        return f"Error: Invalid period_name. Must be one of {', '.join(PERIOD_NAMES)}"
    if year < 1 or year > 9999:
        return "Error: year must be between 1 and 9999"
    if period_name.startswith("Q"):
        start, months = datetime(year, 3 * int(period_name[1]) - 2, 1), 3
    elif period_name in SEASON_START:
        start, months = datetime(year, SEASON_START[period_name], 1), 3
    else:
        start, months = datetime(year, PERIOD_NAMES.index(period_name) + 1, 1), 1
    try:
        end = _months_before(start, -months)
    except ValueError as error:  # past year 9999
        return UNEXPECTED.format(error)
    return {"start_date": start.strftime(DATETIME), "end_date": end.strftime(DATETIME)}


def get_qualified_agent_ids_by_case_count(agent_handled_cases: dict[str, int], n_cases: int) -> Any:
    """Filters agent IDs based on the number of cases they have handled."""
    if not isinstance(agent_handled_cases, dict):
        return "Error: agent_handled_cases must be a dictionary"
    if not isinstance(n_cases, int):
        return "Error: n_cases must be an integer"
    try:
        return [agent for agent, count in agent_handled_cases.items() if count >= n_cases]
    except TypeError as error:
        return UNEXPECTED.format(error)


def calculate_region_average_closure_times(cases: list[dict[str, Any]]) -> Any:
    """Calculates the average closure times for cases grouped by region (shipping state)."""
    if not isinstance(cases, list):
        return "Error: Input 'cases' must be a list"
    if not cases:
        return "Error: Input 'cases' is empty"
    times: defaultdict[str, list[float]] = defaultdict(list)
    for case in cases:
        if not isinstance(case, dict):
            return "Error: Each case in 'cases' must be a dictionary"
        if not {"ShippingState", "CreatedDate", "ClosedDate"} <= set(case):
            return (
                "Error: Each case dictionary must contain 'ShippingState', 'CreatedDate', "
                "and 'ClosedDate' keys"
            )
        if case["ShippingState"]:
            created = _parsed(str(case["CreatedDate"]), RECORD_DATETIME)
            closed = _parsed(str(case["ClosedDate"]), RECORD_DATETIME)
            if created is None or closed is None:
                return (
                    "Error: Invalid date format. Dates should be in the format "
                    "'YYYY-MM-DDTHH:MM:SSZ'"
                )
            times[case["ShippingState"]].append((closed - created).total_seconds())
    return {region: sum(spent) / len(spent) for region, spent in times.items()}


def get_month_to_case_count(cases: list[dict[str, Any]]) -> Any:
    """Counts the number of cases for each month from a list of cases."""
    if not isinstance(cases, list):
        return "Error: Input must be a list of dictionaries"
    counts: defaultdict[str, int] = defaultdict(int)
    for case in cases:
        if not isinstance(case, dict):
            return "Error: Each case must be a dictionary"
        if "CreatedDate" not in case:
            return "Error: Each case dictionary must contain a 'CreatedDate' key"
        created = _parsed(str(case["CreatedDate"]), RECORD_DATETIME)
        if created is None:
            return "Error: Invalid date format. Expected format: 'YYYY-MM-DDTHH:MM:SSZ'"
        counts[created.strftime("%B")] += 1
    return dict(counts)


def _dates_ok(*dates: Any) -> bool:
    return all(isinstance(d, str) and _parsed(d, DATETIME) is not None for d in dates)


def add_crmarena_tools(server: MCPServer, run_query: RunQuery) -> None:
    """Register CRMArena's tools on `server`; `run_query` is the connector's."""

    def tool(fn: Callable[..., Any]) -> None:
        """Register `fn` under its name, its answer shown as CRMArena shows it: str()."""

        @functools.wraps(fn)
        async def shown(*args: Any, **kwargs: Any) -> str:
            try:
                result = fn(*args, **kwargs)
                if inspect.isawaitable(result):
                    result = await result
            except Exception as error:  # CRMArena's functions answer any failure as text
                return UNEXPECTED.format(error)
            return str(result)

        # Each one queries, and none writes.
        annotations = ToolAnnotations(readOnlyHint=True)
        server.add_tool(shown, name=fn.__name__, structured_output=False, annotations=annotations)

    local: tuple[Callable[..., Any], ...] = (
        calculate_average_handle_time,
        get_start_date,
        get_period,
        get_qualified_agent_ids_by_case_count,
        calculate_region_average_closure_times,
        get_month_to_case_count,
    )
    for computed in local:
        tool(computed)

    async def get_agents_with_max_cases(ctx: Context, subset_cases: list[Any]) -> Any:
        """Returns a list of agent IDs with the maximum number of cases from the given subset
        of cases."""
        return _count_by_owner(subset_cases, max)

    async def get_agents_with_min_cases(ctx: Context, subset_cases: list[Any]) -> Any:
        """Returns a list of agent IDs with the minimum number of cases from the given subset
        of cases."""
        return _count_by_owner(subset_cases, min)

    async def find_id_with_max_value(ctx: Context, values_by_id: dict[str, Any]) -> Any:
        """Identifies the ID with the maximum value from a dictionary."""
        return _find_by_value(values_by_id, max)

    async def find_id_with_min_value(ctx: Context, values_by_id: dict[str, Any]) -> Any:
        """Identifies the ID with the minimum value from a dictionary."""
        return _find_by_value(values_by_id, min)

    async def get_agent_handled_cases_by_period(
        ctx: Context, start_date: str, end_date: str
    ) -> Any:
        """Retrieve the number of cases handled by each agent within a specified time period."""
        if not _dates_ok(start_date, end_date):
            return "Error: Invalid date format. Use 'YYYY-MM-DDTHH:MM:SSZ'"
        result, status = await run_query(
            ctx,
            "SELECT NewValue__c, CreatedDate FROM CaseHistory__c WHERE CreatedDate >= "
            f"{start_date} AND CreatedDate <= {end_date} AND Field__c = 'Owner Assignment'",
        )
        if status == 0:
            return result
        if not result:
            return {}
        handled: defaultdict[Any, int] = defaultdict(int)
        for record in result:
            handled[record.get("NewValue__c")] += 1
        return handled

    async def get_cases(
        ctx: Context,
        start_date: str | None = None,
        end_date: str | None = None,
        agent_ids: list[str] | None = None,
        case_ids: list[str] | None = None,
        order_item_ids: list[str] | None = None,
        issue_ids: list[str] | None = None,
        statuses: list[str] | None = None,
    ) -> Any:
        """Retrieve cases based on various filtering criteria."""
        condition = []
        if start_date:
            if not _dates_ok(start_date):
                return "Error: start_date must be in the format 'YYYY-MM-DDTHH:MM:SSZ'"
            condition.append(f"CreatedDate >= {start_date}")
        if end_date:
            if not _dates_ok(end_date):
                return "Error: end_date must be in the format 'YYYY-MM-DDTHH:MM:SSZ'"
            condition.append(f"CreatedDate < {end_date}")
        for field, values in (
            ("OwnerId", agent_ids),
            ("Id", case_ids),
            ("OrderItemId__c", order_item_ids),
            ("IssueId__c", issue_ids),
            ("Status", statuses),
        ):
            if values:
                condition.append(_in_list(field, values))
        if not condition:
            return "Error: At least one filter criteria must be provided"
        where = " AND ".join(condition)
        result, _ = await run_query(
            ctx, f"SELECT OwnerId, CreatedDate, ClosedDate, AccountId FROM Case WHERE {where}"
        )
        return result

    async def get_non_transferred_case_ids(ctx: Context, start_date: str, end_date: str) -> Any:
        """Retrieves the IDs of cases that were not transferred between agents within a
        specified date range."""
        if not _dates_ok(start_date, end_date):
            return "Error: start_date and end_date must be in the format 'YYYY-MM-DDTHH:MM:SSZ'"
        result, status = await run_query(
            ctx,
            "SELECT CaseId__c FROM CaseHistory__c WHERE Field__c = 'Owner Assignment' AND "
            f"CreatedDate >= {start_date} AND CreatedDate <= {end_date} GROUP BY CaseId__c "
            "HAVING COUNT(Id) = 1",
        )
        return result if status == 0 else [record["CaseId__c"] for record in result]

    async def get_agent_transferred_cases_by_period(
        ctx: Context, start_date: str, end_date: str, qualified_agent_ids: list[str] | None = None
    ) -> Any:
        """Retrieves the number of cases transferred between agents within a specified date
        range."""
        qualified = qualified_agent_ids or []
        if not _dates_ok(start_date, end_date):
            return "Error: start_date and end_date must be in the format 'YYYY-MM-DDTHH:MM:SSZ'"
        result, status = await run_query(
            ctx,
            "SELECT OldValue__c, CreatedDate FROM CaseHistory__c WHERE Field__c = 'Owner "
            f"Assignment' AND OldValue__c != NULL AND CreatedDate >= {start_date} AND "
            f"CreatedDate <= {end_date}",
        )
        if status == 0:
            return result
        transfers: defaultdict[str, int] = defaultdict(int)
        for record in result:
            agent = record.get("OldValue__c")
            if agent is None or (qualified and agent not in qualified):
                continue
            transfers[agent] += 1
        return dict(transfers)

    async def get_shipping_state(ctx: Context, cases: list[Any]) -> Any:
        """Adds shipping state information to the given cases."""
        if not cases:
            return cases
        if not all(isinstance(case, dict) for case in cases):
            return "Error: Each case in 'cases' must be a dictionary"
        if not all("AccountId" in case for case in cases):
            return "Error: Each case dictionary must contain an 'AccountId' key"
        accounts = [case["AccountId"] for case in cases]
        result, status = await run_query(
            ctx, f"SELECT Id, ShippingState FROM Account WHERE {_in_list('Id', accounts)}"
        )
        if status == 0:
            return result
        states = {record["Id"]: record.get("ShippingState") for record in result}
        for case in cases:
            case["ShippingState"] = states.get(case["AccountId"])
        return cases

    async def get_order_item_ids_by_product(ctx: Context, product_id: str) -> Any:
        """Retrieves the order item IDs associated with a given product."""
        if not product_id:
            return "Error: product_id cannot be empty"
        result, status = await run_query(
            ctx, f"SELECT Id FROM OrderItem WHERE Product2Id = '{product_id}'"
        )
        return result if status == 0 else [record["Id"] for record in result]

    async def get_issue_counts(
        ctx: Context, start_date: str, end_date: str, order_item_ids: list[str]
    ) -> Any:
        """Retrieves the issue counts for a product within a given time period."""
        if not order_item_ids:
            return "Error: order_item_ids must be a non-empty list"
        items = "','".join(map(str, order_item_ids))
        result, status = await run_query(
            ctx,
            f"SELECT IssueId__c, COUNT(Id) IssueCount FROM Case WHERE OrderItemId__c IN "
            f"('{items}') AND CreatedDate >= {start_date} AND CreatedDate <= {end_date} "
            "GROUP BY IssueId__c ORDER BY COUNT(Id) DESC",
        )
        if status == 0:
            return result
        return {record.get("IssueId__c"): record["IssueCount"] for record in result}

    async def get_account_id_by_contact_id(ctx: Context, contact_id: str) -> Any:
        """Retrieves the Account ID associated with a given Contact ID."""
        if not contact_id:
            return "Error: contact_id cannot be empty"
        result, status = await run_query(
            ctx, f"SELECT AccountId FROM Contact WHERE Id = '{contact_id}' LIMIT 1"
        )
        if status == 0:
            return result
        return result[0].get("AccountId") if result else result

    async def get_purchase_history(
        ctx: Context, account_id: str, purchase_date: str, related_product_ids: list[str]
    ) -> Any:
        """Retrieves the purchase history for a specific account, date, and set of products."""
        if not _dates_ok(purchase_date):
            return "Error: purchase_date must be in 'YYYY-MM-DDTHH:MM:SSZ' format"
        products = "','".join(related_product_ids)
        result, _ = await run_query(
            ctx,
            f"SELECT Product2Id FROM OrderItem WHERE OrderItem.Order.AccountId = '{account_id}' "
            f"AND OrderItem.Order.EffectiveDate = {purchase_date.split('T')[0]} AND Product2Id "
            f"IN ('{products}') AND OrderItem.Order.Status = 'Activated'",
        )
        return result

    async def search_knowledge_articles(ctx: Context, search_term: str) -> Any:
        """Searches for knowledge articles based on a given search term."""
        if not search_term.strip():
            return "Error: search_term cannot be empty"
        result, status = await run_query(
            ctx,
            f"FIND {{{search_term}}} IN ALL FIELDS RETURNING Knowledge__kav(Id, Title, "
            "FAQ_Answer__c WHERE PublishStatus='Online' AND Language='en_US')",
        )
        if status == 0:
            return result
        return [
            {
                "Id": record.get("Id", ""),
                "Title": record.get("Title", ""),
                "Content": record.get("FAQ_Answer__c", ""),
            }
            for record in result
        ]

    async def search_products(ctx: Context, search_term: str) -> Any:
        """Searches for products based on a given search term."""
        if not search_term.strip():
            return "Error: search_term cannot be empty"
        result, status = await run_query(
            ctx, f"FIND {{{search_term}}} IN ALL FIELDS RETURNING Product2(Id, Name, Description)"
        )
        return result if status == 0 else [record["Id"] for record in result]

    async def get_issues(ctx: Context) -> Any:
        """Retrieves a list of issue records from Salesforce."""
        result, _ = await run_query(ctx, "SELECT Id, Name FROM Issue__c")
        return result

    async def respond(ctx: Context, content: str) -> Any:
        """Returns the response content."""
        return content

    async def get_email_messages_by_case_id(ctx: Context, case_id: str) -> Any:
        """Retrieves email messages associated with a specific case ID."""
        result, _ = await run_query(
            ctx,
            "SELECT Subject, TextBody, FromAddress, ToAddress, MessageDate FROM EmailMessage "
            f"WHERE ParentId = '{case_id}'",
        )
        return result

    async def get_livechat_transcript_by_case_id(ctx: Context, case_id: str) -> Any:
        """Retrieves live chat transcripts associated with a specific case ID."""
        result, _ = await run_query(
            ctx, f"SELECT Body, EndTime FROM LiveChatTranscript WHERE CaseId = '{case_id}'"
        )
        return result

    async def issue_soql_query(ctx: Context, query: str) -> Any:
        """Runs a SOQL query."""
        result, _ = await run_query(ctx, query)
        return result

    async def issue_sosl_query(ctx: Context, query: str) -> Any:
        """Runs a SOSL query."""
        result, _ = await run_query(ctx, query)
        return result

    queried: tuple[Callable[..., Any], ...] = (
        get_agents_with_max_cases,
        get_agents_with_min_cases,
        find_id_with_max_value,
        find_id_with_min_value,
        get_agent_handled_cases_by_period,
        get_cases,
        get_non_transferred_case_ids,
        get_agent_transferred_cases_by_period,
        get_shipping_state,
        get_order_item_ids_by_product,
        get_issue_counts,
        get_account_id_by_contact_id,
        get_purchase_history,
        search_knowledge_articles,
        search_products,
        get_issues,
        respond,
        get_email_messages_by_case_id,
        get_livechat_transcript_by_case_id,
        issue_soql_query,
        issue_sosl_query,
    )
    for query_tool in queried:
        tool(query_tool)
