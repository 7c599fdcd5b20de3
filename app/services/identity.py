"""Who the session's user is, as the identity URL (`/id/{org}/{user}`) and OAuth's OpenID
`userinfo` describe them: the same facts (read from the User record) in two vocabularies."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import Connection, select

from app.metadata.values import format_datetime
from app.services.auth import ORG_ID, Session
from app.storage.tables import TableSet

# The User fields the two documents are built from (every one is in the standard User).
USER_FIELDS = (
    "FirstName",
    "LastName",
    "Name",
    "Email",
    "Phone",
    "MobilePhone",
    "Street",
    "City",
    "State",
    "PostalCode",
    "Country",
    "IsActive",
    "TimeZoneSidKey",
    "LocaleSidKey",
    "LanguageLocaleKey",
    "LastModifiedDate",
)

# OpenID's address claims, by the User field each is read from (absent when the field is empty).
ADDRESS_CLAIMS = {
    "street_address": "Street",
    "locality": "City",
    "region": "State",
    "country": "Country",
    "postal_code": "PostalCode",
}


@dataclass(frozen=True)
class UserFacts:
    session: Session
    base_url: str
    fields: dict[str, Any]
    now: datetime

    def get(self, name: str, default: Any = None) -> Any:
        value = self.fields.get(name)
        return default if value is None else value

    @property
    def identity_url(self) -> str:
        return f"{self.base_url}/id/{ORG_ID}/{self.session.user_id}"

    @property
    def display_name(self) -> str:
        return str(self.get("Name", self.session.username))

    @property
    def nickname(self) -> str:
        # CommunityNickname is not in the schema: Salesforce defaults it from the username.
        return self.session.username.partition("@")[0]

    @property
    def timezone(self) -> str:
        return str(self.get("TimeZoneSidKey", "America/Los_Angeles"))

    @property
    def utc_offset_ms(self) -> int:
        try:
            zone = ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            return 0
        offset = self.now.replace(tzinfo=UTC).astimezone(zone).utcoffset()
        return 0 if offset is None else int(offset.total_seconds() * 1000)

    @property
    def last_modified(self) -> datetime:
        value = self.fields.get("LastModifiedDate")
        return value if isinstance(value, datetime) else self.now

    def photos(self) -> dict[str, str]:
        return {
            "picture": f"{self.base_url}/profilephoto/005/F",
            "thumbnail": f"{self.base_url}/profilephoto/005/T",
        }

    def account(self) -> dict[str, Any]:
        """What both documents say of the account, in the same words: its URLs, whether it is
        active, its type, language, locale and offset from UTC."""
        return {
            "urls": self.urls(),
            "active": bool(self.get("IsActive", True)),
            "user_type": "STANDARD",
            "language": self.get("LanguageLocaleKey", "en_US"),
            "locale": self.get("LocaleSidKey", "en_US"),
            "utcOffset": self.utc_offset_ms,
        }

    def urls(self) -> dict[str, str]:
        base, org = self.base_url, ORG_ID
        data = f"{base}/services/data/v{{version}}"
        return {
            "enterprise": f"{base}/services/Soap/c/{{version}}/{org}",
            "metadata": f"{base}/services/Soap/m/{{version}}/{org}",
            "partner": f"{base}/services/Soap/u/{{version}}/{org}",
            "rest": f"{data}/",
            "sobjects": f"{data}/sobjects/",
            "search": f"{data}/search/",
            "query": f"{data}/query/",
            "recent": f"{data}/recent/",
            "tooling_soap": f"{base}/services/Soap/T/{{version}}/{org}",
            "tooling_rest": f"{data}/tooling/",
            "profile": f"{base}/{self.session.user_id}",
            "feeds": f"{data}/chatter/feeds",
            "groups": f"{data}/chatter/groups",
            "users": f"{data}/chatter/users",
            "feed_items": f"{data}/chatter/feed-items",
            "feed_elements": f"{data}/chatter/feed-elements",
            "custom_domain": base,
        }


def read_user(conn: Connection, tables: TableSet, user_id: str) -> dict[str, Any]:
    """The User record's fields the documents use; empty when the session's user is gone."""
    users = tables["User"]
    row = conn.execute(
        select(*(users.c[name] for name in USER_FIELDS)).where(users.c.Id == user_id)
    ).first()
    return {} if row is None else dict(zip(USER_FIELDS, row, strict=True))


def identity_document(user: UserFacts) -> dict[str, Any]:
    """The identity URL's answer, field for field as Salesforce's identity service gives it."""
    return {
        "id": user.identity_url,
        "asserted_user": True,
        "user_id": user.session.user_id,
        "organization_id": ORG_ID,
        "username": user.session.username,
        "nick_name": user.nickname,
        "display_name": user.display_name,
        "email": user.get("Email", user.session.username),
        "email_verified": True,
        "first_name": user.get("FirstName"),
        "last_name": user.get("LastName", user.display_name),
        "timezone": user.timezone,
        "photos": user.photos(),
        "addr_street": user.get("Street"),
        "addr_city": user.get("City"),
        "addr_state": user.get("State"),
        "addr_country": user.get("Country"),
        "addr_zip": user.get("PostalCode"),
        "mobile_phone": user.get("MobilePhone"),
        "mobile_phone_verified": False,
        "is_lightning_login_user": False,
        "status": {"created_date": None, "body": None},
        **user.account(),
        "last_modified_date": format_datetime(user.last_modified),
        "is_app_installed": True,
    }


def userinfo_document(user: UserFacts) -> dict[str, Any]:
    """OAuth's OpenID Connect `userinfo`: the same user in the OpenID claims' names."""
    photos = user.photos()
    return {
        "sub": user.identity_url,
        "user_id": user.session.user_id,
        "organization_id": ORG_ID,
        "preferred_username": user.session.username,
        "nickname": user.nickname,
        "name": user.display_name,
        "email": user.get("Email", user.session.username),
        "email_verified": True,
        "given_name": user.get("FirstName"),
        "family_name": user.get("LastName", user.display_name),
        "zoneinfo": user.timezone,
        "photos": photos,
        "profile": f"{user.base_url}/{user.session.user_id}",
        "picture": photos["picture"],
        "address": {
            claim: user.get(field)
            for claim, field in ADDRESS_CLAIMS.items()
            if user.get(field) is not None
        },
        "is_salesforce_integration_user": False,
        **user.account(),
        "updated_at": user.last_modified.strftime("%Y-%m-%dT%H:%M:%SZ"),  # OpenID: seconds
        "is_app_installed": True,
    }
