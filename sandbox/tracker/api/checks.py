"""Field validation for the write endpoints: collect every problem, then answer one 422."""

from __future__ import annotations

from haul.sandbox.people import User
from haul.sandbox.timefmt import format_ms, parse_instant
from haul.sandbox.tracker.api.errors import invalid
from haul.sandbox.tracker.model import Org

MAX_TEXT = 512_000


class Checks:
    """Reads fields of one request body, remembering a message per bad field."""

    def __init__(self, org: Org, body: dict) -> None:
        self.org = org
        self.body = body
        self.errors: dict[str, str] = {}

    def fail(self, field: str, message: str) -> None:
        self.errors.setdefault(field, message)

    def done(self) -> None:
        """Raise the 422 if any field failed."""
        if self.errors:
            raise invalid(self.errors)

    def present(self, name: str) -> bool:
        return self.body.get(name) is not None

    def text(self, name: str, *, required: bool = False, limit: int = MAX_TEXT) -> str | None:
        value = self.body.get(name)
        if value is None:
            if required:
                self.fail(name, "Required field")
            return None
        if not isinstance(value, str) or (required and not value.strip()):
            self.fail(name, "Must be a non-empty string" if required else "Must be a string")
            return None
        if len(value) > limit:
            self.fail(name, f"Must be at most {limit} characters")
            return None
        return value

    def instant(self, name: str, *, required: bool = False) -> int | None:
        value = self.body.get(name)
        if value is None:
            if required:
                self.fail(name, "Required field")
            return None
        moment = parse_instant(value)
        if moment is None:
            self.fail(name, "Must be a timestamp like 2024-01-01T00:00:00.000+0000")
        return moment

    def user(self, name: str, *, required: bool = False) -> User | None:
        value = self.body.get(name)
        if value is None:
            if required:
                self.fail(name, "Required field")
            return None
        found = self.org.find_user(value)
        if found is None:
            self.fail(name, f"User {value!r} does not exist in this organization")
        return found

    def users(self, name: str) -> tuple[int, ...]:
        values = self.body.get(name) or []
        if not isinstance(values, list):
            self.fail(name, "Must be a list of logins or uids")
            return ()
        found = [self.org.find_user(value) for value in values]
        if any(user is None for user in found):
            self.fail(name, "Every entry must be a user of this organization")
            return ()
        return tuple(user.uid for user in found if user is not None)

    def strings(self, name: str) -> tuple[str, ...]:
        values = self.body.get(name) or []
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            self.fail(name, "Must be a list of strings")
            return ()
        return tuple(values)

    def together(self, *names: str) -> bool:
        """True if all names are given; a 422 if only some of them are."""
        given = [self.present(name) for name in names]
        if any(given) and not all(given):
            for name, ok in zip(names, given, strict=True):
                if not ok:
                    self.fail(name, f"{', '.join(names)} must be given together")
        return all(given)

    def within(self, name: str, moment: int | None, lo: int, hi: int, what: str) -> None:
        """Fail ``name`` unless ``moment`` lies in ``[lo, hi]``."""
        if moment is not None and not lo <= moment <= hi:
            self.fail(name, f"Must lie within {what} [{format_ms(lo)}, {format_ms(hi)}]")
