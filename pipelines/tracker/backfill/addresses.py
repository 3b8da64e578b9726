"""Which target login a back-fill's author names: a login, or an email address.

A form's answer names its author the way people write themselves down, often as an address.
An address is matched whole: the target user whose email it is, else a login that is the whole
address. Its part before ``@`` alone is matched only when its domain is one of the
organisation's own (`[mapping] email_domains`): ``heidi@outsider.example`` is not the
organisation's heidi. What matches nothing is None, and the caller goes the documented way
for an unmapped author (the survey's author, else the default user, named in the report).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any


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
