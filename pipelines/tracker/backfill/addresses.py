"""Which target login a back-fill's author names: a login, or an email address.

A form's answer names its author the way people write themselves down, often as an address.
An address is matched whole: the target user whose email it is, else a login that is the whole
address. Its part before ``@`` alone is matched only when its domain is one of the
organisation's own (`[mapping] email_domains`): ``heidi@outsider.example`` is not the
organisation's heidi. What matches nothing is None, and the caller goes the documented way
for an unmapped author (the survey's author, else the default user, named in the report).

`haul check` warns, on the target side, of each tracker back-fill without `created_by` whose
survey's author names no target user (`backfill_authors`): its answers load as the default user.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Config
from haul.pipelines.findings import Finding
from haul.pipelines.forms.staged import author_login, rules
from haul.pipelines.tracker.target import TrackerTarget, default_user
from haul.state.store import StagingStore


@dataclass(frozen=True)
class TargetPeople:
    """The target's logins, its users' email addresses (lower case) -> login, and the
    organisation's email domains (lower case)."""

    logins: Collection[str]
    emails: Mapping[str, str]
    domains: Collection[str] = ()

    @classmethod
    def of(cls, users: Iterable[dict[str, Any]], domains: Iterable[str] = ()) -> TargetPeople:
        """From the target's user records (`login`, `email`) and `mapping.email_domains`."""
        logins, emails = set(), {}
        for user in users:
            login = str(user.get("login") or "")
            if not login:
                continue
            logins.add(login)
            if user.get("email"):
                emails[str(user["email"]).strip().lower()] = login
        return cls(logins, emails, {domain.lower() for domain in domains})

    def login_for(self, written: str) -> str | None:
        """The target login `written` names (a login, or an address), or None."""
        name = written.strip()
        if "@" not in name:
            return name if name in self.logins else None
        if (found := self.emails.get(name.lower())) is not None:
            return found
        if name in self.logins:
            return name
        local, _, domain = name.rpartition("@")
        return local if domain.lower() in self.domains and local in self.logins else None


async def backfill_authors(
    config: Config,
    client: TrackerClient,
    store: StagingStore | None,
    side: str,
    target: TrackerTarget | None,
) -> list[Finding]:
    """The back-fill layer's `checks`: on the target side, a warning per tracker back-fill
    without `created_by` whose survey's author (staged) has no target user."""
    if side != "target" or store is None:
        return []
    waiting = [
        (index, rule, author_login(survey.raw))
        for index, rule in rules(config, "tracker")
        if not rule.created_by and (survey := store.get_record("survey", rule.survey)) is not None
    ]
    if not waiting:
        return []
    if target is not None:  # the target's users staged for every check: not listed again
        users = [row.raw for row in store.iter_records("target.user")]
        default = default_user(store, config) or "none"
    else:
        users = [user async for user in client.iter_users()]
        default = config.mapping.default_user or str((await client.myself()).get("login"))
    people = TargetPeople.of(users, config.mapping.email_domains)
    return [
        Finding(
            "warning",
            f"backfill[{index}]: the author of survey {rule.survey} ({author or 'none'}) has "
            f"no target user: its answers are loaded as the default user {default}",
            "set created_by in the rule, or mapping.default_user",
        )
        for index, rule, author in waiting
        if people.login_for(author) is None
    ]
