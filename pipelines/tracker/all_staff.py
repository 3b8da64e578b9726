"""The group of every person of an organisation, mapped by its id, never by its name.

The tracker gives that group the id 1 in every organisation (the vendor's own importer names it
`ALL_PARTICIPANTS_GROUP_ID = 1`) and a name in the organisation's language ("All employees",
"Все сотрудники"): a source in one language and a target in another would map it to no one by
name, and a queue or entity open to everyone would arrive open to no group. So a source group
with that id maps to the target's group of every person, unless `[mapping] groups_file` maps it
elsewhere (by its name or its id).
"""

from __future__ import annotations

from collections.abc import Mapping

ALL_STAFF_ID = "1"


def is_all_staff(group_id: str, name: str, group_file: Mapping[str, str]) -> bool:
    """Whether a source group (its id and name) maps to the target's group of every person by
    its id: it is that group at the source, and the groups file maps it nowhere else."""
    return group_id == ALL_STAFF_ID and not (group_file.get(name) or group_file.get(group_id))
