"""Transactions on a store's connection: BEGIN and COMMIT at the top, savepoints inside.

sqlite-utils' ``Database.atomic`` names each nested savepoint with fresh random hex, so every
SAVEPOINT and RELEASE is a statement SQLite compiles anew (its statement cache never hits) after
a read of the OS's randomness. A drain used to open a dozen of those per issue, around
write methods that were already inside the drain's transaction (cProfile on the small org's
extract: 42 000 savepoint statements, an eighth of its CPU). Here a savepoint has one fixed
name, which nests correctly (RELEASE and ROLLBACK TO act on the newest savepoint of that
name), and a write method inside an open transaction joins it without a savepoint at all.
"""

from collections.abc import Iterator
from contextlib import contextmanager

from sqlite_utils import Database

_SAVEPOINT = "haul_nested"


@contextmanager
def atomic(db: Database) -> Iterator[None]:
    """Everything written inside commits together or not at all: its own transaction, or,
    inside an open one, a savepoint undone alone if the block raises."""
    conn = db.conn
    if not conn.in_transaction:
        with db.atomic():  # BEGIN ... COMMIT, or ROLLBACK on any exception
            yield
        return
    conn.execute(f"SAVEPOINT {_SAVEPOINT}")
    try:
        yield
    except BaseException:
        # an error such as a full disk may have ended the whole transaction already
        if conn.in_transaction:
            conn.execute(f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}")
            conn.execute(f"RELEASE SAVEPOINT {_SAVEPOINT}")
        raise
    conn.execute(f"RELEASE SAVEPOINT {_SAVEPOINT}")


@contextmanager
def joined(db: Database) -> Iterator[None]:
    """The statements of one write method: committed together on their own, or part of the
    caller's open transaction (no savepoint: if they fail, the exception reaches the caller's
    ``atomic`` block, which undoes them with the rest)."""
    if db.conn.in_transaction:
        yield
        return
    with db.atomic():
        yield
