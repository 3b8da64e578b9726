"""The export's documentation, made from the registry: `haul export --describe` prints it, and
the docs site's table reference (docs/reference/tables.md) is made from it when the site is
built (docs/hooks.py), so neither can drift from the tables."""

from __future__ import annotations

from haul.pipelines.export.tables import Registry, Table


def describe_markdown(registry: Registry) -> str:
    """Every table (and family) of `registry` (`service_tables`) with its typed columns, as
    Markdown."""
    # by service, then in each service's own order: the same whichever module was imported first
    tables = sorted(registry.tables, key=lambda table: table.service)
    families = sorted(registry.families, key=lambda family: family.service)
    parts = [_table_markdown(table) for table in tables]
    parts += [f"**{family.name}** ({family.service}): {family.doc}\n" for family in families]
    return "\n".join(parts)


def _table_markdown(table: Table) -> str:
    lines = [
        f"**{table.name}** ({table.service}, {table.origin}): {table.doc}",
        "",
        "| column | type | meaning |",
        "|---|---|---|",
    ]
    lines += [
        f"| `{column.name}` | {column.type} | {column.doc.replace('|', '/')} |"
        for column in table.all_columns
    ]
    return "\n".join(lines) + "\n"
