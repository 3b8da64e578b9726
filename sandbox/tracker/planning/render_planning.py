"""JSON shapes of saved filters, dashboards and widgets, applications, remote links (as the
recorded ``remotelinks/create`` reply), and queue autoactions with their run logs."""

from __future__ import annotations

from haul.sandbox.timefmt import format_ms
from haul.sandbox.tracker.api.render_refs import View, entry_ref, issue_ref, queue_ref, user_ref
from haul.sandbox.tracker.planning.planning import (
    Application,
    AutoAction,
    AutoActionRun,
    Dashboard,
    RemoteLink,
    SavedFilter,
    Widget,
)


def saved_filter(view: View, value: SavedFilter) -> dict:
    body: dict = {
        "self": f"{view.base}/filters/{value.id}",
        "id": value.id,
        "name": value.name,
        "owner": user_ref(view, value.owner),
        "createdAt": format_ms(value.created_at),
    }
    if value.query is not None:
        body["query"] = value.query
    if value.filter is not None:
        body["filter"] = value.filter
    return body


def dashboard(view: View, value: Dashboard) -> dict:
    return {
        "self": f"{view.base}/dashboards/{value.id}",
        "id": value.id,
        "version": value.version,
        "name": value.name,
        "layout": value.layout,
        "owner": user_ref(view, value.owner),
        "createdBy": user_ref(view, value.created_by),
        "createdAt": format_ms(value.created_at),
    }


def widget(view: View, owner: Dashboard, value: Widget) -> dict:
    body = {
        "self": f"{view.base}/dashboards/{owner.id}/widgets/{value.id}",
        "id": value.id,
        "type": value.type,
        "dashboard": {
            "self": f"{view.base}/dashboards/{owner.id}",
            "id": owner.id,
            "display": owner.name,
        },
        "description": value.description,
        "query": value.query,
        "fromStatuses": [entry_ref(view, "statuses", key) for key in value.from_statuses],
        "toStatuses": [entry_ref(view, "statuses", key) for key in value.to_statuses],
        "createdBy": user_ref(view, value.created_by),
        "createdAt": format_ms(value.created_at),
        **value.extra,
    }
    if value.mode is not None:
        body["mode"] = value.mode
    return body


def application(view: View, value: Application) -> dict:
    return {
        "self": f"{view.base}/applications/{value.id}",
        "id": value.id,
        "type": value.type,
        "name": value.name,
    }


def remote_link(view: View, value: RemoteLink, app: Application) -> dict:
    kind = view.org.link_types[value.type]
    author = user_ref(view, value.created_by)
    return {
        "self": f"{view.base}/issues/{value.issue}/remotelinks/{value.id}",
        "id": value.id,
        "type": {
            "self": f"{view.base}/linktypes/{kind.id}",
            "id": kind.id,
            "inward": kind.inward,
            "outward": kind.outward,
        },
        "direction": value.direction,
        "object": {
            "self": f"{app.base_url}{value.key}",
            "id": f"{app.id}:{value.key}",
            "key": value.key,
            "application": application(view, app),
        },
        "createdBy": author,
        "updatedBy": author,
        "createdAt": format_ms(value.created_at),
        "updatedAt": format_ms(value.created_at),
    }


def autoaction(view: View, value: AutoAction) -> dict:
    body: dict = {
        "self": f"{view.base}/queues/{value.queue}/autoactions/{value.id}",
        "id": value.id,
        "queue": queue_ref(view, value.queue),
        "name": value.name,
        "version": value.version,
        "active": value.active,
        "created": format_ms(value.created_at),
        "updated": format_ms(value.updated_at),
        "actions": value.actions,
        "enableNotifications": value.enable_notifications,
        "intervalMillis": value.interval_millis,
    }
    if value.filter is not None:
        body["filter"] = value.filter
    if value.query is not None:
        body["query"] = value.query
    if value.calendar is not None:
        body["calendar"] = value.calendar
    if value.runs:
        last = value.runs[-1]
        body["lastLaunch"] = format_ms(last.launched_at)
        body["totalIssuesProcessed"] = last.hits
    return body


def run_summary(value: AutoActionRun) -> dict:
    failures = sum(1 for o in value.outcomes if o.status == "failure")
    return {
        "id": value.id,
        "launchTime": format_ms(value.launched_at),
        "searchHits": value.hits,
        "successes": len(value.outcomes) - failures,
        "failures": failures,
        "searchFailed": False,
    }


def run_outcomes(view: View, value: AutoActionRun) -> list[dict]:
    found = []
    for n, outcome in enumerate(value.outcomes):
        issue = view.org.issues.get(outcome.issue)
        ref = (
            {**issue_ref(view, issue), "version": issue.version}
            if issue
            else {"key": outcome.issue}
        )
        status = {"value": outcome.status, "display": outcome.status.capitalize()}
        found.append({"id": n, "issueReference": ref, "status": status})
    return found
