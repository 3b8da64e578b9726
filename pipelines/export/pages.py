"""Pages an export writes beside its tables: self-contained HTML drawn from the export's own
`haul.duckdb` once it is complete, so every figure on a page is in the file.

A service hands its `Page`s over as `Service.pages` (a file name and a function of a read-only
DuckDB connection giving the HTML, or None when the database holds nothing to draw); the export
writes each into its folder, atomically, and lists it in the manifest's `pages`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from haul.pipelines.export import layout

if TYPE_CHECKING:  # imported where a page is drawn: every haul command imports this module
    import duckdb


@dataclass(frozen=True)
class Page:
    """One page: its file name, and how to draw it from the database."""

    name: str
    render: Callable[[duckdb.DuckDBPyConnection], str | None]


def write_pages(folder: Path, database: Path, pages: Iterable[Page]) -> list[str]:
    """Each page drawn from `database` into `folder`; the names written."""
    import duckdb  # 40 ms a process: paid by the export alone

    written = []
    with duckdb.connect(str(database), read_only=True) as db:
        for page in pages:
            html = page.render(db)
            if html is None:
                continue
            with layout.atomic_file(folder / page.name) as partial:
                partial.write_text(html, encoding="utf-8")
            written.append(page.name)
    return written
