"""How the store reads: one row, or many streamed in keyset pages.

Neither leaves a SQLite statement open while the caller works. A generator that kept one
cursor open across its yields would have the caller's writes, commits and rollbacks happen
under a live read statement: SQLite leaves the results of such a read undefined, and a
rollback aborts it. Each page here is a short statement read
to the end before its rows are yielded; the next page starts after the last key seen, so
memory stays at one page and rows the caller changes meanwhile are seen as they are then.
"""

from collections.abc import Iterator, Sequence
from typing import Any

from sqlite_utils import Database

PAGE_SIZE = 500


def iter_keyset(
    db: Database,
    select: str,
    *,
    where: Sequence[str] = (),
    params: Sequence[Any] = (),
    keys: Sequence[str],
    page_size: int = PAGE_SIZE,
) -> Iterator[dict[str, Any]]:
    """Yield the rows of `select` (a SELECT ... FROM ... naming the `keys` columns) that match
    every `where` clause, in `keys` order, `page_size` rows per statement.

    `keys` must identify a row uniquely and hold no NULLs (row-value comparison skips NULLs).
    """
    order = ", ".join(keys)
    after: tuple[Any, ...] | None = None
    while True:
        clauses, args = list(where), list(params)
        if after is not None:
            clauses.append(f"({order}) > ({', '.join('?' * len(keys))})")
            args.extend(after)
        condition = " AND ".join(clauses) or "1"
        sql = f"{select} WHERE {condition} ORDER BY {order} LIMIT {page_size}"
        page = list(db.query(sql, args))
        yield from page
        if len(page) < page_size:
            return
        after = tuple(page[-1][key] for key in keys)


def fetch_one(db: Database, sql: str, params: Sequence[Any] = ()) -> dict[str, Any] | None:
    """The first row of `sql` as a dict, or None; the statement is finished before returning."""
    cursor = db.execute(sql, params)
    names = [column[0] for column in cursor.description]
    row = cursor.fetchone()
    cursor.close()
    return None if row is None else dict(zip(names, row, strict=True))
