"""Which target pages haul made, told by a line haul writes at the top of each.

The wiki keeps no field a client may set for its own use (no `unique` as the tracker's import
has, no page property), and a page's author is the migrating admin, who may have made pages by
hand too. So every page haul writes starts with a markdown comment naming the migration and
the source page::

    [//]: # (haul:<source org>:<source slug>)

(a link reference definition: the wiki renders nothing of it). A page at a migrated slug with
this migration's line for that source page is haul's, made in an earlier run even when the
staging store that knew it is lost; any other page there is a conflict, never adopted: `haul
plan` names it, and the load fails the page (and what hangs under it) with the way out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_LINE = re.compile(r"^\[//\]: # \((haul:[^)\n]*)\)$", re.MULTILINE)
WAY_OUT = (
    "move or delete that page in the target, or map the root elsewhere ([mapping] wiki_roots),"
    " then run haul load --retry-failed"
)


def with_marker(text: str, line: str) -> str:
    """The text with haul's line first, a blank line between (the line alone for no text)."""
    return f"{line}\n\n{text}" if text else line


def markers(content: str) -> list[str]:
    """The haul lines in a page's content, as `haul:<org>:<source slug>`, first first."""
    return _LINE.findall(content)


@dataclass(frozen=True)
class PageOwnership:
    """The line of one migration (`migration`: "haul:<source org>") and what it tells."""

    migration: str

    def line(self, source_slug: str) -> str:
        """The line that marks the page made for `source_slug`."""
        return f"[//]: # ({self.migration}:{source_slug})"

    def ours(self, page: dict[str, Any], source_slug: str) -> bool:
        """Whether a target page (read with its content) is the one haul made for it."""
        return f"{self.migration}:{source_slug}" in markers(str(page.get("content") or ""))

    def taken(self, slug: str, page: dict[str, Any]) -> str:
        """Why `slug` in the target cannot take the migrated page, after who made the page
        there (its line, if any)."""
        found = markers(str(page.get("content") or ""))
        if not found:
            title = page.get("title") or ""
            return f"the target already has a page at {slug} that haul did not make ({title!r})"
        _, org, source = found[0].split(":", 2)
        if f"haul:{org}" == self.migration:
            return (
                f"the target's page at {slug} was loaded there by this migration for page"
                f" {source} (two roots mapped onto one place, now or in an earlier run)"
            )
        return (
            f"the target's page at {slug} is page {source} of org {org}, loaded by another"
            " haul migration"
        )
