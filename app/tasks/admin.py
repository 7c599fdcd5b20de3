"""Beyond both benchmarks: an administrator's tasks, whose answer is a change to the org's
schema made through the Metadata API, graded by the episode's diff (its `schema`: the expected
custom objects and fields made as their metadata says, nothing else changed; app.tasks.schema_diff).

- custom_field_creation: add a custom field of given properties to one of the org's objects;
- custom_object_creation: create a custom object, and a field of it;
- custom_field_update: make one of the org's custom fields required, relabel it, or both.

Each answer lists the components as the Metadata API writes them (`{"type": "CustomField" |
"CustomObject", "id": fullName, "fields": metadata}`). A task states every property of what it
asks for in words this module writes and its solver reads back (`field_sentence` and
`read_fields`), as an administrator would read a ticket."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from random import Random
from typing import Any

from app.metadata.custom_metadata import custom_field_metadata, is_custom_name, metadata_type
from app.metadata.schema_changes import FIELD_TYPES, NEVER_REQUIRED
from app.tasks import org_sql
from app.tasks.model import (
    EVERY_ORG,
    WORKFLOW,
    Api,
    Draft,
    MetadataApi,
    NoAnswer,
    NotScripted,
    OrgData,
    TaskType,
)
from app.tasks.tools import SCHEMA_CHANGES

Metadata = dict[str, Any]

POLICY = (
    "Make schema changes through the Metadata API (CustomObject and CustomField components). A "
    "property the task does not state keeps Salesforce's default: a field is not required, not "
    "unique and not an external ID; a picklist is unrestricted, has no default value, and its "
    "values' labels are the values. Change nothing else in the org: no other field or object, "
    "no record."
)
# The objects of every org a new field is added to.
FIELD_OBJECTS = ("Account", "Contact", "Case", "Lead", "Opportunity", "Product2")
LEADS = ("", "A request from the operations team: ", "Please extend the schema. ")


def api_name(label: str) -> str:
    """A custom component's API name from its label, as Setup proposes it."""
    return re.sub(r"[^A-Za-z0-9]+", "_", label).strip("_") + "__c"


def _and_list(values: list[str]) -> str:
    return values[0] if len(values) == 1 else ", ".join(values[:-1]) + " and " + values[-1]


# --- a field in words ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    """A field type as a task words it: Setup's name for it, its Metadata type, the phrase
    that states its own properties (placeholders named as its elements) and the labels a new
    field of it is drawn with."""

    words: str
    metadata_type: str
    phrase: str = ""
    labels: tuple[str, ...] = ()
    # Its own elements, drawn for a new field.
    draw: Callable[[Random], Metadata] = lambda rng: {}
    keyable: bool = False  # may be unique and an external ID

    def pattern(self) -> re.Pattern[str]:
        """The phrase as a regular expression, each placeholder a named group."""
        parts = re.split(r"\{(\w+)\}", self.phrase)
        source = "".join(
            re.escape(part) if index % 2 == 0 else f"(?P<{part}>.+?)"
            for index, part in enumerate(parts)
        )
        return re.compile(source + r"\Z")


def _digits(*choices: tuple[int, int]) -> Callable[[Random], Metadata]:
    def draw(rng: Random) -> Metadata:
        precision, scale = rng.choice(choices)
        return {"precision": precision, "scale": scale}

    return draw


PICKLISTS = {
    "Customer Tier": ["Gold", "Silver", "Bronze"],
    "Preferred Channel": ["Email", "Phone", "Chat"],
    "Risk Level": ["Low", "Medium", "High"],
    "Renewal Outlook": ["Likely", "Uncertain", "Unlikely"],
}
DIGITS = " with {precision} digits, {scale} of them after the decimal point"
KINDS = (
    Kind(
        "Checkbox",
        "Checkbox",
        ", {defaultValue} by default",
        ("Warranty Eligible", "Requires Follow Up", "Key Account", "Do Not Survey"),
        lambda rng: {"defaultValue": rng.choice([True, False])},
    ),
    Kind(
        "Text",
        "Text",
        " of at most {length} characters",
        ("Legacy Reference", "Region Code", "Partner Code", "Tracking Number"),
        lambda rng: {"length": rng.choice([20, 40, 80, 120])},
        keyable=True,
    ),
    Kind(
        "Number",
        "Number",
        DIGITS,
        ("Satisfaction Score", "Seat Count", "Renewal Term Months"),
        _digits((3, 0), (5, 2), (8, 0)),
        keyable=True,
    ),
    Kind(
        "Currency",
        "Currency",
        DIGITS,
        ("Budget Estimate", "Credit Limit", "Refund Amount"),
        _digits((16, 2), (12, 2)),
    ),
    Kind(
        "Percent",
        "Percent",
        DIGITS,
        ("Discount Ceiling", "Margin Target"),
        _digits((5, 2), (3, 0)),
    ),
    Kind("Date", "Date", "", ("Contract Review Date", "Last Audit Date", "Onboarding Date")),
    Kind("Date/Time", "DateTime", "", ("First Response Time", "Last Sync Time")),
    Kind(
        "Picklist",
        "Picklist",
        " with the values {values}",
        tuple(PICKLISTS),
    ),
    Kind("Email", "Email", "", ("Billing Contact Email", "Escalation Email"), keyable=True),
    Kind("Phone", "Phone", "", ("Support Hotline", "After Hours Phone")),
    Kind("URL", "Url", "", ("Portal Link", "Contract Document Link")),
    Kind(
        "Long Text Area",
        "LongTextArea",
        " of at most {length} characters, showing {visibleLines} lines",
        ("Internal Notes", "Onboarding Summary"),
        lambda rng: {"length": rng.choice([1000, 32768]), "visibleLines": rng.choice([3, 5])},
    ),
    Kind(
        "Lookup",
        "Lookup",
        " to {referenceTo}, its related list named {relationshipName}",
    ),
)
BY_WORDS = {kind.words: kind for kind in KINDS}
BY_TYPE = {kind.metadata_type: kind for kind in KINDS}


def _value_set(values: list[str]) -> Metadata:
    return {"valueSetDefinition": {"value": [{"fullName": value} for value in values]}}


# How each element a phrase names reads in words, and back.
def _to_words(metadata: Mapping[str, Any]) -> dict[str, str]:
    words = {key: str(value) for key, value in metadata.items()}
    if "defaultValue" in metadata:
        words["defaultValue"] = "checked" if metadata["defaultValue"] else "unchecked"
    if "valueSet" in metadata:
        values = metadata["valueSet"]["valueSetDefinition"]["value"]
        words["values"] = _and_list([value["fullName"] for value in values])
    return words


INTEGERS = ("length", "precision", "scale", "visibleLines")


def _from_words(words: Mapping[str, str]) -> Metadata:
    metadata: Metadata = {}
    for key, text in words.items():
        if key == "defaultValue":
            metadata[key] = text == "checked"
        elif key == "values":
            metadata["valueSet"] = _value_set(re.split(r", | and ", text))
        else:
            metadata[key] = int(text) if key in INTEGERS else text
    return metadata


FLAGS = {"required": "required", "unique": "unique", "externalId": "an external ID"}
FIELD_SENTENCE = re.compile(
    r'Create an? (?P<kind>[\w/ ]+?) field on (?P<sobject>\w+) labelled "(?P<label>[^"]+)" '
    r"\(API name (?P<name>\w+)\)(?P<details>[^.]*)\.(?: It is (?P<flags>[^.]+)\.)?"
)


def field_sentence(sobject: str, name: str, metadata: Mapping[str, Any]) -> str:
    """A new field in words: its type, object, label and name, its type's properties, and
    which of required, unique and external ID it is."""
    kind = BY_TYPE[metadata["type"]]
    article = "an" if kind.words == "Email" else "a"
    details = kind.phrase.format(**_to_words(metadata))
    flags = [words for element, words in FLAGS.items() if metadata.get(element)]
    stated = f" It is {_and_list(flags)}." if flags else ""
    return (
        f'Create {article} {kind.words} field on {sobject} labelled "{metadata["label"]}" '
        f"(API name {name}){details}.{stated}"
    )


def read_fields(text: str) -> list[tuple[str, str, Metadata]]:
    """Each field a task's words ask for: (object, name, metadata)."""
    found = []
    for sentence in FIELD_SENTENCE.finditer(text):
        kind = BY_WORDS.get(sentence["kind"])
        words = None if kind is None else kind.pattern().match(sentence["details"])
        if kind is None or words is None:
            raise NotScripted(f"No field the script reads in: {sentence[0]}")
        flags = sentence["flags"] or ""
        metadata = {
            "label": sentence["label"],
            "type": kind.metadata_type,
            **_from_words(words.groupdict()),
            **{element: True for element, said in FLAGS.items() if said in flags},
        }
        found.append((sentence["sobject"], sentence["name"], metadata))
    return found


def _new_field(rng: Random) -> Metadata:
    kind = rng.choice([kind for kind in KINDS if kind.labels])
    label = rng.choice(kind.labels)
    metadata = {"label": label, "type": kind.metadata_type, **kind.draw(rng)}
    if kind.metadata_type == "Picklist":
        metadata["valueSet"] = _value_set(PICKLISTS[label])
    if kind.metadata_type not in NEVER_REQUIRED and rng.random() < 0.3:
        metadata["required"] = True
    if kind.keyable and rng.random() < 0.3:
        metadata["unique"] = metadata["externalId"] = True
    return metadata


def _field_change(sobject: str, name: str, metadata: Metadata) -> dict[str, Any]:
    return {"type": "CustomField", "id": f"{sobject}.{name}", "fields": metadata}


def _today(data: OrgData) -> Any:
    return org_sql.day_span(data.conn, data.tables, "Case", "CreatedDate")[1]


# --- the draws ----------------------------------------------------------------------------------


def draw_field_creation(rng: Random, data: OrgData) -> Draft:
    sobject = data.tables.registry.get(rng.choice(FIELD_OBJECTS))
    metadata = _new_field(rng)
    name = api_name(metadata["label"])
    if sobject is None or sobject.field(name) is not None:
        raise NoAnswer  # the org has no such object, or the field already
    query = rng.choice(LEADS) + field_sentence(sobject.name, name, metadata)
    params = {"org": data.org, "object": sobject.name, "field": metadata}
    return Draft(
        [_field_change(sobject.name, name, metadata)], query, _today(data), POLICY, "", params
    )


@dataclass(frozen=True)
class ObjectIdea:
    label: str
    plural: str
    number_format: str  # its records' auto number, where they are numbered
    field_labels: tuple[str, ...]  # the labels of the field it is created with
    parent: str  # the object its lookup field points to


OBJECTS = (
    ObjectIdea("Warranty Claim", "Warranty Claims", "WC-{0000}", ("Claim Filed Date",), "Case"),
    ObjectIdea("Site Visit", "Site Visits", "SV-{00000}", ("Visit Date",), "Account"),
    ObjectIdea("Training Session", "Training Sessions", "TS-{000}", ("Session Date",), "Contact"),
    ObjectIdea("Product Return", "Product Returns", "PR-{0000}", ("Return Date",), "Product2"),
    ObjectIdea("Partner Referral", "Partner Referrals", "REF-{0000}", ("Referred On",), "Lead"),
    ObjectIdea("Deal Review", "Deal Reviews", "DR-{000}", ("Review Date",), "Opportunity"),
)
OBJECT_SENTENCE = re.compile(
    r'Create a custom object labelled "(?P<label>[^"]+)" \(plural "(?P<plural>[^"]+)", API '
    r'name (?P<name>\w+)\), its records named by (?:a Text field labelled "(?P<text>[^"]+)"|an '
    r'Auto Number field labelled "(?P<number>[^"]+)" in the format (?P<format>\S+))\.'
)


def object_sentence(name: str, metadata: Mapping[str, Any]) -> str:
    name_field = metadata["nameField"]
    named = (
        f'an Auto Number field labelled "{name_field["label"]}" in the format '
        f"{name_field['displayFormat']}"
        if name_field["type"] == "AutoNumber"
        else f'a Text field labelled "{name_field["label"]}"'
    )
    return (
        f'Create a custom object labelled "{metadata["label"]}" (plural '
        f'"{metadata["pluralLabel"]}", API name {name}), its records named by {named}.'
    )


def read_object(text: str) -> tuple[str, Metadata]:
    found = OBJECT_SENTENCE.search(text)
    if found is None:
        raise NotScripted("No custom object the script reads in the task")
    if found["text"]:
        name_field = {"type": "Text", "label": found["text"]}
    else:
        name_field = {
            "type": "AutoNumber",
            "label": found["number"],
            "displayFormat": found["format"],
        }
    metadata = {"label": found["label"], "pluralLabel": found["plural"], "nameField": name_field}
    return found["name"], metadata


def draw_object_creation(rng: Random, data: OrgData) -> Draft:
    idea = rng.choice(OBJECTS)
    name = api_name(idea.label)
    parent = data.tables.registry.get(idea.parent)
    if data.tables.registry.get(name) is not None or parent is None:
        raise NoAnswer
    numbered = rng.random() < 0.5
    name_field = (
        {"type": "AutoNumber", "label": f"{idea.label} Number", "displayFormat": idea.number_format}
        if numbered
        else {"type": "Text", "label": f"{idea.label} Name"}
    )
    metadata = {"label": idea.label, "pluralLabel": idea.plural, "nameField": name_field}
    if rng.random() < 0.5:
        field = {"label": rng.choice(idea.field_labels), "type": "Date"}
    else:
        relationship = api_name(idea.plural).removesuffix("__c")
        field = {
            "label": parent.label,
            "type": "Lookup",
            "referenceTo": idea.parent,
            "relationshipName": relationship,
        }
    field_name = api_name(field["label"])
    query = " ".join(
        [
            object_sentence(name, metadata),
            "Give it one field.",
            field_sentence(name, field_name, field),
        ]
    )
    answer = [
        {"type": "CustomObject", "id": name, "fields": metadata},
        _field_change(name, field_name, field),
    ]
    params = {"org": data.org, "object": metadata, "field": field}
    return Draft(answer, rng.choice(LEADS) + query, _today(data), POLICY, "", params)


RELABELS = ("Primary {label}", "Verified {label}", "{label} (Legacy)")
UPDATE_SENTENCES = {
    (True, False): "Make the {sobject} field {name} required.",
    (False, True): 'Relabel the {sobject} field {name} "{label}".',
    (True, True): 'Make the {sobject} field {name} required, and relabel it "{label}".',
}


def _updatable(data: OrgData) -> list[tuple[str, str]]:
    """The org's own custom fields an update may change in place: (object, field)."""
    return [
        (sobject.name, field.name)
        for sobject in data.tables.registry
        for field in sobject.fields
        if is_custom_name(field.name)
        and field.updateable
        and not field.calculated
        and metadata_type(field) in FIELD_TYPES
    ]


def draw_field_update(rng: Random, data: OrgData) -> Draft:
    sobject_name, field_name = rng.choice(_updatable(data))
    sobject = data.tables.registry.get(sobject_name)
    assert sobject is not None
    field = sobject.field(field_name)
    assert field is not None
    metadata = custom_field_metadata(sobject, field)
    metadata.pop("fullName")
    requirable = field.nillable and metadata["type"] not in NEVER_REQUIRED
    required, relabel = rng.choice([(True, False), (False, True), (True, True)])
    if required and not requirable:
        raise NoAnswer
    label = rng.choice(RELABELS).format(label=field.label) if relabel else field.label
    if required:
        metadata["required"] = True
    metadata["label"] = label
    sentence = UPDATE_SENTENCES[(required, relabel)]
    query = rng.choice(LEADS) + sentence.format(sobject=sobject.name, name=field.name, label=label)
    params = {
        "org": data.org,
        "field": f"{sobject.name}.{field.name}",
        "required": required,
        "label": label,
    }
    return Draft(
        [_field_change(sobject.name, field.name, metadata)], query, _today(data), POLICY, "", params
    )


# --- the reference solvers ----------------------------------------------------------------------


def _metadata_api(api: Api) -> MetadataApi:
    if not isinstance(api, MetadataApi):
        raise NotScripted("The script changes the schema through the Metadata API")
    return api


def _saved(results: list[Any]) -> None:
    failed = [result for result in results if str(result.get("success")) != "true"]
    if failed:
        raise NotScripted(f"The Metadata API refused the change: {failed}")


def solve_field_creation(api: Api, task: dict[str, Any]) -> str:
    metadata_api = _metadata_api(api)
    components = [
        {"fullName": f"{sobject}.{name}", **metadata}
        for sobject, name, metadata in read_fields(task["query"])
    ]
    _saved(metadata_api.change_metadata("createMetadata", "CustomField", components))
    return "Created " + ", ".join(component["fullName"] for component in components) + "."


def solve_object_creation(api: Api, task: dict[str, Any]) -> str:
    metadata_api = _metadata_api(api)
    name, metadata = read_object(task["query"])
    custom_object = {
        "fullName": name,
        **metadata,
        "deploymentStatus": "Deployed",
        "sharingModel": "ReadWrite",
    }
    _saved(metadata_api.change_metadata("createMetadata", "CustomObject", [custom_object]))
    solve_field_creation(api, task)
    return f"Created {name} and its field."


UPDATE_ASKED = re.compile(r"the (?P<sobject>\w+) field (?P<name>\w+)")


def solve_field_update(api: Api, task: dict[str, Any]) -> str:
    metadata_api = _metadata_api(api)
    text = task["query"]
    asked = UPDATE_ASKED.search(text)
    if asked is None:
        raise NotScripted("No field the script reads in the task")
    full_name = f"{asked['sobject']}.{asked['name']}"
    (current,) = metadata_api.read_metadata("CustomField", [full_name])
    if current is None:
        raise NotScripted(f"No field {full_name}")
    changed = dict(current)
    if re.search(r"\brequired\b", text):
        changed["required"] = "true"
    relabel = re.search(r'"([^"]+)"', text)
    if relabel:
        changed["label"] = relabel[1]
    _saved(metadata_api.change_metadata("updateMetadata", "CustomField", [changed]))
    return f"Updated {full_name}."


PERSONA = "Salesforce Administrator"
TASK_TYPES = tuple(
    TaskType(
        name=name,
        skill=WORKFLOW,
        persona=PERSONA,
        reward_metric="diff_match",
        draw=draw,
        solve=solve,
        orgs=EVERY_ORG,
        tools=SCHEMA_CHANGES,
    )
    for name, draw, solve in (
        ("custom_field_creation", draw_field_creation, solve_field_creation),
        ("custom_object_creation", draw_object_creation, solve_object_creation),
        ("custom_field_update", draw_field_update, solve_field_update),
    )
)
