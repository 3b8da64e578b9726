"""Every rule of the admin _import family, and the status code each broken rule gets."""

from __future__ import annotations

import gc
import logging
import socket
import time

import httpx
import pytest

from haul.sandbox.server import RunningSandbox
from haul.sandbox.tracker.catalog import RELATIONSHIPS

JAN = "2023-01-01T00:00:00.000+0000"
FEB = "2023-02-01T00:00:00.000+0000"
MAR = "2023-03-01T00:00:00.000+0000"
LATER = "2023-06-01T00:00:00.000+0000"


def new_issue(target: httpx.Client, created: str = JAN, updated: str = MAR, **extra) -> dict:
    """Import an issue into the target org's NEW queue with window [created, updated]."""
    body = {
        "queue": "NEW",
        "summary": "Imported",
        "createdAt": created,
        "createdBy": "alice",
        "updatedAt": updated,
        "updatedBy": "bob",
        **extra,
    }
    reply = target.post("/issues/_import", json=body)
    assert reply.status_code == 201, reply.text
    return reply.json()


def target_id(target: httpx.Client, path: str, key: str) -> int:
    return next(entry["id"] for entry in target.get(f"/{path}").json() if entry["key"] == key)


class TestIssueImport:
    def test_times_are_kept_and_keys_advance(self, target: httpx.Client) -> None:
        """The reply keeps createdAt/updatedAt; an auto key follows the highest imported one."""
        issue = new_issue(target, key="NEW-700")
        assert (issue["createdAt"], issue["updatedAt"]) == (JAN, MAR)
        number = int(issue["key"].split("-")[1])
        auto = target.post(
            "/issues/_import",
            json={"queue": "NEW", "summary": "auto", "createdAt": JAN, "createdBy": "bob"},
        )
        assert auto.json()["key"] == f"NEW-{number + 1}"
        assert auto.json()["updatedAt"] == JAN  # no updatedAt given: the creation time

    @pytest.mark.parametrize("field", ["queue", "summary", "createdAt", "createdBy"])
    def test_required_fields(self, target: httpx.Client, field: str) -> None:
        """Each missing required field is a 422 naming it."""
        body = {"queue": "NEW", "summary": "s", "createdAt": JAN, "createdBy": "alice"}
        del body[field]
        reply = target.post("/issues/_import", json=body)
        assert reply.status_code == 422 and field in reply.json()["errors"]

    @pytest.mark.parametrize(
        ("change", "field"),
        [
            ({"summary": "x" * 256}, "summary"),
            ({"createdAt": "2999-01-01T00:00:00.000+0000"}, "createdAt"),
            ({"createdAt": "yesterday"}, "createdAt"),
            ({"createdBy": "nobody"}, "createdBy"),
            ({"queue": "NOPE"}, "queue"),
            ({"key": "TEST-5"}, "key"),
            ({"updatedAt": FEB}, "updatedBy"),
            ({"updatedBy": "bob"}, "updatedAt"),
            ({"updatedAt": "2022-12-31T00:00:00.000+0000", "updatedBy": "bob"}, "updatedAt"),
            ({"updatedAt": "2999-01-01T00:00:00.000+0000", "updatedBy": "bob"}, "updatedAt"),
            ({"resolvedAt": FEB, "resolvedBy": "bob"}, "resolution"),
            ({"status": "noSuchStatus"}, "status"),
            ({"type": 999}, "type"),
            ({"priority": {"key": "normal"}}, "priority"),
            ({"assignee": "ghost"}, "assignee"),
            ({"tags": "one"}, "tags"),
        ],
    )
    def test_validation_failures(self, target: httpx.Client, change: dict, field: str) -> None:
        """Each broken rule is a 422 whose errors name the field."""
        body = {"queue": "NEW", "summary": "s", "createdAt": JAN, "createdBy": "alice", **change}
        reply = target.post("/issues/_import", json=body)
        assert reply.status_code == 422, reply.text
        assert field in reply.json()["errors"] and reply.json()["statusCode"] == 422

    def test_resolution_must_fall_before_the_update(self, target: httpx.Client) -> None:
        """resolvedAt after updatedAt is refused; inside the window it is kept."""
        fixed = target_id(target, "resolutions", "fixed")
        triple = {"resolvedBy": "carol", "resolution": fixed}
        body = {"queue": "NEW", "summary": "s", "createdAt": JAN, "createdBy": "alice"}
        body |= {"updatedAt": FEB, "updatedBy": "bob"}
        late = target.post("/issues/_import", json={**body, **triple, "resolvedAt": MAR})
        assert late.status_code == 422 and "resolvedAt" in late.json()["errors"]
        ok = target.post("/issues/_import", json={**body, **triple, "resolvedAt": FEB})
        assert ok.status_code == 201
        assert ok.json()["resolution"]["key"] == "fixed" and ok.json()["resolvedAt"] == FEB

    def test_ids_of_the_other_org_are_refused(
        self, source: httpx.Client, target: httpx.Client
    ) -> None:
        """Dictionary ids and uids are per organisation: a loader must map them by key."""
        status = target_id(source, "statuses", "inProgress")
        alice = next(u for u in source.get("/users").json()["users"] if u["login"] == "alice")
        body = {"queue": "NEW", "summary": "s", "createdAt": JAN, "createdBy": alice["uid"]}
        reply = target.post("/issues/_import", json={**body, "status": status})
        assert reply.status_code == 422 and set(reply.json()["errors"]) == {"status", "createdBy"}
        mapped = target_id(target, "statuses", "inProgress")
        by_login = target.post(
            "/issues/_import", json={**body, "createdBy": "alice", "status": mapped}
        )
        assert by_login.status_code == 201 and by_login.json()["status"]["key"] == "inProgress"

    def test_dictionary_keys_are_taken_as_ids_are(self, target: httpx.Client) -> None:
        """status, type, priority and resolution by key, as the vendor's importer sends
        them, land as the same values ids would give."""
        body = {"queue": "NEW", "summary": "s", "createdAt": JAN, "createdBy": "alice"}
        body |= {"updatedAt": FEB, "updatedBy": "bob", "resolvedAt": FEB, "resolvedBy": "bob"}
        keys = {"status": "closed", "type": "bug", "priority": "minor", "resolution": "fixed"}
        reply = target.post("/issues/_import", json={**body, **keys})
        assert reply.status_code == 201, reply.text
        assert {name: reply.json()[name]["key"] for name in keys} == keys

    def test_an_unknown_key_is_a_clear_422(self, target: httpx.Client) -> None:
        """A key the organisation lacks is refused, naming the field and what it takes."""
        body = {"queue": "NEW", "summary": "s", "createdAt": JAN, "createdBy": "alice"}
        reply = target.post("/issues/_import", json={**body, "type": "noSuchType"})
        assert reply.status_code == 422
        assert reply.json()["errors"] == {
            "type": "Unknown type 'noSuchType': a key or a numeric id of this organization's"
            " issuetypes"
        }

    def test_existing_key_and_unique_conflict(self, target: httpx.Client) -> None:
        """A key or unique seen before is a 409; _findByUnique finds the first issue."""
        issue = new_issue(target, unique="migration-1")
        again = target.post(
            "/issues/_import",
            json={
                "queue": "NEW",
                "key": issue["key"],
                "summary": "s",
                "createdAt": JAN,
                "createdBy": "alice",
            },
        )
        assert again.status_code == 409
        twin = {"queue": "NEW", "summary": "s", "createdAt": JAN, "createdBy": "alice"}
        assert (
            target.post("/issues/_import", json={**twin, "unique": "migration-1"}).status_code
            == 409
        )
        found = target.post("/issues/_findByUnique", params={"unique": "migration-1"})
        assert found.status_code == 200 and found.json()["key"] == issue["key"]
        missing = target.post("/issues/_findByUnique", params={"unique": "never"})
        assert missing.status_code == 404

    def test_estimates_dates_and_points_are_echoed(self, target: httpx.Client) -> None:
        """Estimates in ms come back as ISO-8601 durations; dates and story points as sent."""
        issue = new_issue(
            target,
            originalEstimation=3_600_000,
            spent=5_400_000,
            deadline="2023-04-01",
            storyPoints=3,
        )
        assert (issue["originalEstimation"], issue["spent"]) == ("PT1H", "PT1H30M")
        assert (issue["deadline"], issue["storyPoints"]) == ("2023-04-01", 3.0)
        body = {"queue": "NEW", "summary": "s", "createdAt": JAN, "createdBy": "alice"}
        bad = target.post("/issues/_import", json={**body, "estimation": "1h", "start": "April"})
        assert bad.status_code == 422 and set(bad.json()["errors"]) == {"estimation", "start"}

    def test_unknown_keys_are_ignored(self, target: httpx.Client) -> None:
        """Extra keys such as aliases or descriptionRenderType do not fail the import."""
        issue = new_issue(target, aliases=["X-1"], descriptionRenderType="wf", description="d")
        assert issue["description"] == "d" and "aliases" not in issue


class TestRecordImports:
    def test_comment_window_and_updated_at(self, target: httpx.Client) -> None:
        """Comments inside [createdAt, updatedAt] are kept; the issue's updatedAt stays."""
        issue = new_issue(target)
        path = f"/issues/{issue['key']}/comments/_import"
        for when, status in (
            (JAN, 201),
            (MAR, 201),
            ("2022-12-31T23:59:59.999+0000", 422),
            (LATER, 422),
        ):
            reply = target.post(path, json={"text": "t", "createdAt": when, "createdBy": "carol"})
            assert reply.status_code == status, when
        partial = target.post(
            path, json={"text": "t", "createdAt": FEB, "createdBy": "carol", "updatedAt": FEB}
        )
        assert partial.status_code == 422 and "updatedBy" in partial.json()["errors"]
        after = target.get(f"/issues/{issue['key']}").json()
        assert after["updatedAt"] == MAR and after["commentWithoutExternalMessageCount"] == 2

    def test_comment_on_a_missing_issue(self, target: httpx.Client) -> None:
        reply = target.post(
            "/issues/NEW-99999/comments/_import",
            json={"text": "t", "createdAt": JAN, "createdBy": "bob"},
        )
        assert reply.status_code == 404 and reply.json()["errorMessages"] == [
            "Issue does not exist."
        ]

    def test_worklog_answers_an_array(self, target: httpx.Client) -> None:
        """200 with a one-element array; bad duration, missing start, or outside window: 422."""
        issue = new_issue(target)
        path = f"/issues/{issue['key']}/worklogs/_import"
        body = {"duration": "P1DT2H", "start": FEB, "createdAt": FEB, "createdBy": "dave"}
        reply = target.post(path, json=body)
        assert reply.status_code == 200 and isinstance(reply.json(), list)
        assert reply.json()[0]["duration"] == "P1DT2H"
        for change, field in (
            ({"duration": "2h"}, "duration"),
            ({"start": None}, "start"),
            ({"createdAt": LATER}, "createdAt"),
        ):
            bad = target.post(path, json={**body, **change})
            assert bad.status_code == 422 and field in bad.json()["errors"]
        listed = target.get(f"/issues/{issue['key']}/worklog").json()
        assert [w["id"] for w in listed] == [reply.json()[0]["id"]]

    @pytest.mark.parametrize("relationship", sorted(RELATIONSHIPS))
    def test_link_relationships(self, target: httpx.Client, relationship: str) -> None:
        """Each verb stores one link: its type and direction, the opposite seen from the other end."""
        one, two = new_issue(target), new_issue(target)
        reply = target.post(
            f"/issues/{one['key']}/links/_import",
            json={
                "relationship": relationship,
                "issue": two["key"],
                "createdAt": FEB,
                "createdBy": "eve",
            },
        )
        assert reply.status_code == 201
        link_type, direction = RELATIONSHIPS[relationship]
        mine = target.get(f"/issues/{one['key']}/links").json()
        theirs = target.get(f"/issues/{two['key']}/links").json()
        assert [
            (link["type"]["id"], link["direction"], link["object"]["key"]) for link in mine
        ] == [(link_type, direction, two["key"])]
        opposite = "inward" if direction == "outward" else "outward"
        assert [
            (link["type"]["id"], link["direction"], link["object"]["key"]) for link in theirs
        ] == [(link_type, opposite, one["key"])]

    def test_link_rules(self, target: httpx.Client) -> None:
        """Duplicate (from either end) 422; missing other issue 404; outside both windows 422."""
        one, two = new_issue(target), new_issue(target, created=FEB, updated=LATER)
        body = {
            "relationship": "depends on",
            "issue": two["key"],
            "createdAt": FEB,
            "createdBy": "eve",
        }
        assert target.post(f"/issues/{one['key']}/links/_import", json=body).status_code == 201
        again = target.post(
            f"/issues/{two['key']}/links/_import",
            json={**body, "issue": one["key"], "relationship": "is dependent by"},
        )
        assert again.status_code == 422
        other_type = target.post(
            f"/issues/{one['key']}/links/_import", json={**body, "relationship": "relates"}
        )
        assert other_type.status_code == 201
        missing = target.post(
            f"/issues/{one['key']}/links/_import", json={**body, "issue": "NEW-99999"}
        )
        assert missing.status_code == 404
        early = target.post(
            f"/issues/{one['key']}/links/_import",
            json={**body, "relationship": "clone", "createdAt": JAN},
        )
        assert early.status_code == 422 and "createdAt" in early.json()["errors"]
        verb = target.post(
            f"/issues/{one['key']}/links/_import", json={**body, "relationship": "blocks"}
        )
        assert verb.status_code == 422 and "relationship" in verb.json()["errors"]

    def test_attachment_round_trip(self, target: httpx.Client) -> None:
        """The uploaded bytes download unchanged; any part name works; window and file enforced."""
        issue = new_issue(target)
        path = f"/issues/{issue['key']}/attachments/_import"
        params = {"filename": "отчёт 1.txt", "createdAt": FEB, "createdBy": "frank"}
        data = "привет, 世界 👋".encode() * 500
        reply = target.post(path, params=params, files={"upload": ("blob", data)})
        assert reply.status_code == 201 and reply.json()["size"] == len(data)
        assert httpx.get(reply.json()["content"], headers=target.headers).content == data
        late = target.post(path, params={**params, "createdAt": LATER}, files={"file": ("f", b"x")})
        assert late.status_code == 422
        no_file = target.post(path, params=params, json={})
        assert no_file.status_code == 422 and "file" in no_file.json()["errors"]

    def test_comment_attachment(self, target: httpx.Client) -> None:
        """A comment's file carries commentId, shows in the comment's expand and the issue list."""
        issue = new_issue(target)
        comment = target.post(
            f"/issues/{issue['key']}/comments/_import",
            json={"text": "see file", "createdAt": FEB, "createdBy": "grace"},
        ).json()
        params = {"filename": "shot.png", "createdAt": FEB, "createdBy": "grace"}
        base = f"/issues/{issue['key']}/comments"
        reply = target.post(
            f"{base}/{comment['longId']}/attachments/_import",
            params=params,
            files={"file": ("f", b"png")},
        )
        assert reply.status_code == 201 and reply.json()["commentId"] == str(comment["id"])
        expanded = target.get(base, params={"expand": "attachments"}).json()
        assert [a["id"] for a in expanded[0]["attachments"]] == [reply.json()["id"]]
        assert "attachments" not in target.get(base).json()[0]
        listed = target.get(f"/issues/{issue['key']}/attachments").json()
        assert [a["id"] for a in listed] == [reply.json()["id"]]
        gone = target.post(
            f"{base}/999999/attachments/_import", params=params, files={"file": ("f", b"x")}
        )
        assert gone.status_code == 404


def test_checklist_items(target: httpx.Client) -> None:
    """One item or an array; the reply is the issue with its checklistItems."""
    issue = new_issue(target)
    path = f"/issues/{issue['key']}/checklistItems"
    one = target.post(path, json={"text": "first"})
    assert one.status_code == 200 and [i["text"] for i in one.json()["checklistItems"]] == ["first"]
    more = target.post(
        path,
        json=[
            {"text": "second", "checked": True, "assignee": "bob"},
            {"text": "third", "deadline": FEB},
        ],
    )
    items = target.get(path).json()
    assert [(i["text"], i["checked"]) for i in items] == [
        ("first", False),
        ("second", True),
        ("third", False),
    ]
    assert more.json()["checklistTotal"] == 3 and items[2]["deadline"]["date"] == FEB
    assert target.post(path, json={"checked": True}).status_code == 422


def test_upload_cut_short_leaves_nothing(sandbox: RunningSandbox, target: httpx.Client) -> None:
    """A client killed mid-upload creates no attachment and leaves the server serving."""
    issue = new_issue(target)
    host_port = sandbox.info["tracker"].split("/")[2]
    query = "filename=a.bin&createdAt=2023-02-01&createdBy=alice"
    head = (
        f"POST /v3/issues/{issue['key']}/attachments/_import?{query} HTTP/1.1\r\n"
        f"Host: {host_port}\r\nAuthorization: {target.headers['Authorization']}\r\n"
        f"X-Org-ID: {target.headers['X-Org-ID']}\r\n"
        "Content-Type: multipart/form-data; boundary=XX\r\nContent-Length: 100000\r\n\r\n"
        '--XX\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\n'
    )
    host, port = host_port.split(":")
    errors = ErrorLog()
    logging.getLogger("uvicorn.error").addHandler(errors)
    try:
        with socket.create_connection((host, int(port))) as raw:
            raw.sendall(head.encode() + b"x" * 5000)
            time.sleep(0.1)
        time.sleep(0.1)
        gc.collect()  # temporary files left open would warn now, inside this test
    finally:
        logging.getLogger("uvicorn.error").removeHandler(errors)
    assert errors.messages == []
    assert target.get(f"/issues/{issue['key']}/attachments").json() == []


class ErrorLog(logging.Handler):
    """Collects the server's error log lines."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
