"""The people every organisation of the sandbox shares, in all three services: who they are
(:class:`User`), the fixed list of them, and the two accounts the tokens act as.

Organisations differ in uids, never in logins, so a loader has to map people by login, as it
must against the real services.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class User:
    uid: int
    login: str
    first_name: str
    last_name: str
    cloud_uid: str

    @property
    def display(self) -> str:
        return f"{self.first_name} {self.last_name}".strip()

    @property
    def email(self) -> str:
        return f"{self.login}@example.org"


PEOPLE = (
    ("alice", "Alice", "Anderson"),
    ("bob", "Bob", "Brown"),
    ("carol", "Carol", "Clark"),
    ("dave", "Dave", "Davis"),
    ("eve", "Eve", "Evans"),
    ("frank", "Frank", "Fischer"),
    ("grace", "Grace", "Green"),
    ("heidi", "Heidi", "Hall"),
    ("ivan", "Иван", "Иванов"),
    ("judy", "Judy", "Jones"),
    ("mallory", "Mallory", "Moore"),
    ("niaj", "Niaj", "Nolan"),
    ("olga", "Ольга", "Смирнова"),
    ("peggy", "Peggy", "Parker"),
    ("rupert", "Rupert", "Reed"),
    ("sybil", "Sybil", "Stone"),
    ("trent", "Trent", "Turner"),
    ("victor", "Victor", "Vance"),
    ("wendy", "Wendy", "Walsh"),
    ("yuki", "雪", "田中"),
    ("robot", "Robot", ""),
)
ADMIN_LOGIN = "robot"  # the admin token acts as this service account
USER_LOGIN = "alice"  # the user token acts as this person
