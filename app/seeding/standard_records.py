"""Records every org has whatever its generator or dump holds: the Organization itself and
the standard profiles (a Pro org's users point at the first three)."""

from __future__ import annotations

from typing import Any

from app.seeding.common import PROFILE_PREFIX, PROFILES
from app.seeding.generate.text import load_text
from app.storage.ids import ORGANIZATION_ID, make_id


def organization(org: str) -> dict[str, Any]:
    """The org's Organization record: settings as a new Developer Edition org has them, in
    GMT with a January fiscal year, as the server's defaults (LOCALFORCE_TIMEZONE) are."""
    return {
        "Id": ORGANIZATION_ID,
        "Name": load_text("company", org)["name"],
        "Country": "United States",
        "DefaultLocaleSidKey": "en_US",
        "TimeZoneSidKey": "GMT",
        "LanguageLocaleKey": "en_US",
        "FiscalYearStartMonth": 1,
        "UsesStartDateAsFiscalYearName": False,
        "OrganizationType": "Developer Edition",
        "InstanceName": "LF1",
        "IsSandbox": False,
        "IsReadOnly": False,
        "DefaultAccountAccess": "Edit",
        "DefaultCaseAccess": "Edit",
        "DefaultOpportunityAccess": "Edit",
        "DefaultLeadAccess": "Edit",
    }


def profiles() -> list[dict[str, Any]]:
    return [
        {
            "Id": make_id(PROFILE_PREFIX, number),
            "Name": name,
            "UserType": "Standard",
            "PermissionsApiEnabled": True,
            "PermissionsModifyAllData": admin,
            "PermissionsViewAllData": admin,
        }
        for number, (name, admin) in enumerate(PROFILES, start=1)
    ]


def standard_records(org: str) -> dict[str, list[dict[str, Any]]]:
    """sObject name -> the standard records of `org`."""
    return {"Organization": [organization(org)], "Profile": profiles()}
