"""The planning layer as export tables: saved filters, dashboards and their widgets, remote
links, queue autoactions (queries as the source wrote them). One row per staged record; people
by login, as the issues' tables name them. (Projects, portfolios and goals: `entities.export`.)"""

from __future__ import annotations

from haul.pipelines.export.columns import (
    as_json,
    identifier,
    parent,
    timestamp,
    value,
)
from haul.pipelines.export.id_map import Identity, register_identity
from haul.pipelines.export.tables import Column, Table
from haul.pipelines.tracker.export_columns import of_parent_issue, person
from haul.pipelines.tracker.planning.saved import status_keys

SERVICE = "tracker"

SAVED_FILTERS = Table("saved_filters", "filter", (
    identifier("id", "the filter's id", "id"),
    value("name", "string", "its name", "name"),
    *person("owner", "who owns it", "owner"),
    value("query", "string", "its query, in the query language", "query"),
    as_json("conditions", "its conditions object, JSON", "filter"),
    timestamp("created_at", "when it was made", "createdAt"),
), doc='the saved filters ([scope] filters = "all")', service=SERVICE)  # fmt: skip

DASHBOARDS = Table("dashboards", "dashboard", (
    identifier("id", "the dashboard's id", "id"),
    value("name", "string", "its name", "name"),
    value("layout", "string", "one-column, two-columns or three-columns", "layout"),
    *person("owner", "who owns it", "owner"),
    timestamp("created_at", "when it was made", "createdAt"),
), doc='the dashboards ([scope] dashboards = "all")', service=SERVICE)  # fmt: skip

DASHBOARD_WIDGETS = Table("dashboard_widgets", "dashboard_widget", (
    parent("dashboard_id", "the dashboard it is on"),
    identifier("id", "the widget's id", "id"),
    value("type", "string", "its kind (cycleTime)", "type"),
    value("description", "string", "its title", "description"),
    value("query", "string", "the issues it charts, in the query language", "query"),
    Column("from_statuses", "json", "where its cycle starts, a JSON list of status keys",
           lambda item: status_keys(item.get("fromStatuses"))),
    Column("to_statuses", "json", "where its cycle ends, a JSON list of status keys",
           lambda item: status_keys(item.get("toStatuses"))),
    value("mode", "string", "how it draws the chart", "mode"),
), doc="each dashboard's widgets", service=SERVICE)  # fmt: skip

REMOTE_LINKS = Table("remote_links", "remote_link", (
    parent("issue_key", "the key of the issue it belongs to"),
    identifier("id", "the remote link's id", "id"),
    value("application_id", "string", "the application it points into",
          "object", "application", "id"),
    value("application_name", "string", "that application's name",
          "object", "application", "name"),
    value("object_key", "string", "the object's key in the application", "object", "key"),
    value("type", "string", "the link type (relates, ...)", "type", "id"),
    value("direction", "string", "outward or inward", "direction"),
    *person("created_by", "who made it", "createdBy"),
    timestamp("created_at", "when it was made", "createdAt"),
), doc="the issues' links to objects in external applications", service=SERVICE,
   access=of_parent_issue)  # fmt: skip

AUTOACTIONS = Table("autoactions", "autoaction", (
    parent("queue_key", "the queue it runs in"),
    identifier("id", "the autoaction's id", "id"),
    value("name", "string", "its name", "name"),
    value("active", "bool", "whether it runs", "active"),
    value("query", "string", "the issues it selects, in the query language", "query"),
    as_json("conditions", "the issues it selects, as a conditions object (JSON)", "filter"),
    as_json("actions", "what it does to them, JSON", "actions"),
    value("interval_ms", "int", "how often it runs, in milliseconds", "intervalMillis"),
    value("notifications", "bool", "whether its changes notify people", "enableNotifications"),
    timestamp("created_at", "when it was made", "created"),
), doc="the autoactions of the queues in scope", service=SERVICE)  # fmt: skip

TABLES = (SAVED_FILTERS, DASHBOARDS, DASHBOARD_WIDGETS, REMOTE_LINKS, AUTOACTIONS)

# the key map (`id_map`): saved filters and dashboards by id (their URLs hold the id)
register_identity(Identity("filter", service=SERVICE))
register_identity(Identity("dashboard", service=SERVICE))
