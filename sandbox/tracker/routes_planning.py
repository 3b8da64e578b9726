"""The planning layer's routes in one table, spliced into :data:`sandbox.tracker.app.API`:
entities with their sub-records, temporary uploads, saved filters, dashboards, applications,
remote links and queue autoactions; the groups entity permissions name.  Specific paths come
before the ``{id}`` ones they would otherwise shadow (``_search``, ``_import``, ``_relative``)."""

from __future__ import annotations

from haul.sandbox.tracker.entities import routes_entities as entities
from haul.sandbox.tracker.entities import routes_entity_records as records
from haul.sandbox.tracker.entities import routes_groups as groups
from haul.sandbox.tracker.planning import routes_autoactions as autoactions
from haul.sandbox.tracker.planning import routes_filters as filters
from haul.sandbox.tracker.planning import routes_remotelinks as remotelinks

KIND = "/entities/{entity_type}"
ONE = KIND + "/{entity_id}"

API = (
    ("POST", KIND, entities.create_entity),
    ("POST", f"{KIND}/_search", entities.search_entities),
    ("POST", f"{KIND}/_import", entities.import_entity),
    ("GET", ONE, entities.get_entity),
    ("PATCH", ONE, entities.patch_entity),
    ("DELETE", ONE, entities.delete_entity),
    ("GET", f"{ONE}/permissions", entities.get_permissions),
    ("PATCH", f"{ONE}/permissions", entities.patch_permissions),
    ("GET", f"{ONE}/extendedPermissions", entities.get_extended_permissions),
    ("PATCH", f"{ONE}/extendedPermissions", entities.patch_extended_permissions),
    ("GET", f"{ONE}/events/_relative", entities.list_events),
    ("GET", f"{ONE}/comments", entities.list_comments),
    ("POST", f"{ONE}/comments", entities.create_comment),
    ("GET", f"{ONE}/comments/_relative", entities.relative_comments),
    ("GET", f"{ONE}/comments/{{comment_id}}", entities.get_comment),
    ("PATCH", f"{ONE}/comments/{{comment_id}}", entities.patch_comment),
    ("DELETE", f"{ONE}/comments/{{comment_id}}", entities.delete_comment),
    ("POST", f"{ONE}/checklistItems", records.add_checklist_items),
    ("PATCH", f"{ONE}/checklistItems", records.edit_checklist_items),
    ("DELETE", f"{ONE}/checklistItems", records.clear_checklist),
    ("DELETE", f"{ONE}/checklistItems/{{item_id}}", records.delete_checklist_item),
    ("POST", f"{ONE}/checklistItems/{{item_id}}/_move", records.move_checklist_item),
    ("GET", f"{ONE}/attachments", records.list_attachments),
    ("POST", f"{ONE}/attachments/{{file_id}}", records.attach_file),
    ("GET", f"{ONE}/attachments/{{file_id}}", records.get_attachment),
    ("DELETE", f"{ONE}/attachments/{{file_id}}", records.delete_attachment),
    ("GET", f"{ONE}/links", records.list_links),
    ("POST", f"{ONE}/links", records.create_link),
    ("DELETE", f"{ONE}/links", records.delete_link),
    ("POST", "/attachments", records.upload_temporary),
    ("GET", "/attachments/{file_id}/{filename}", records.download_file),
    ("GET", "/groups", groups.list_groups),
    ("GET", "/filters", filters.list_filters),
    ("POST", "/filters", filters.create_filter),
    ("GET", "/filters/{filter_id}", filters.get_filter),
    ("PATCH", "/filters/{filter_id}", filters.patch_filter),
    ("DELETE", "/filters/{filter_id}", filters.delete_filter),
    ("GET", "/dashboards", filters.list_dashboards),
    ("POST", "/dashboards", filters.create_dashboard),
    ("GET", "/dashboards/{dashboard_id}", filters.get_dashboard),
    ("GET", "/dashboards/{dashboard_id}/widgets", filters.list_widgets),
    ("POST", "/dashboards/{dashboard_id}/widgets/cycleTime", filters.create_cycle_time_widget),
    ("GET", "/applications", remotelinks.list_applications),
    ("GET", "/issues/{key}/remotelinks", remotelinks.list_remote_links),
    ("POST", "/issues/{key}/remotelinks", remotelinks.create_remote_link),
    ("DELETE", "/issues/{key}/remotelinks/{link_id}", remotelinks.delete_remote_link),
    ("GET", "/queues/{queue}/autoactions", autoactions.list_autoactions),
    ("POST", "/queues/{queue}/autoactions", autoactions.create_autoaction),
    ("GET", "/queues/{queue}/autoactions/{action_id}", autoactions.get_autoaction),
    ("PATCH", "/queues/{queue}/autoactions/{action_id}", autoactions.patch_autoaction),
    ("DELETE", "/queues/{queue}/autoactions/{action_id}", autoactions.delete_autoaction),
    ("GET", "/queues/{queue}/autoactions/{action_id}/logs", autoactions.list_runs),
    ("GET", "/queues/{queue}/autoactions/{action_id}/logs/{run_id}", autoactions.get_run),
)
