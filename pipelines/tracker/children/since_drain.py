"""What a later drain of an issue may leave as an earlier one staged it (issue 42, item 3).

A nightly run drains only the issues whose `updatedAt` moved, but each of those used to list
every child again. What is staged under the issue already says most of what the service would
answer:

- **comments**: the issue carries its comment counters and `lastCommentUpdatedAt`, the newest
  comment's update (adding, editing and deleting a comment each move one of them). When the
  counters add up to the comments staged and the newest staged comment is no older than
  `lastCommentUpdatedAt`, the staged comments are the issue's: nothing is listed.
- **changelog**: it only grows, so where it is staged it is listed from the last entry staged
  (the listing's `id` parameter), not from the start, and the staged entries are kept before
  the new ones. It resumes from the last entry no later than the issue's `updatedAt` at its
  last drain: entries staged after that were read while the issue was changing and are read
  again.
- the new entries also say what changed (the documented types: comments and their reactions,
  worklogs, links and a linked issue's resolution, attachments): where the changelog was resumed, the listings of what no new entry names are
  left as staged. Remote links have no documented type: they are left as staged only when
  every new entry is of a documented type that concerns something else (a field edit that
  names no field of links, a transition, a comment, ...). Where the changelog is not staged,
  an issue that changed has it read all the same (a page, mostly, against the two or three
  listings it may spare), and its entries newer than the earlier drain are the new ones.
- the new entries must account for the issue's `updatedAt`: where none is at it (a change the
  service logs no entry for, such as a remote link's on a service that has no type for it),
  only the comments' check spares a listing.

An issue never drained, or one whose `updatedAt` did not move (drained again because an
earlier drain came back with a problem, or the changelog is wanted again), keeps every listing
but the comments' check: a listing too many costs a request, one too few loses records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from haul.pipelines.tracker.timefmt import parse_time
from haul.state.store import StagingStore

# the changelog's documented types that name a change to one of an issue's listings
LISTING_OF_TYPE = {
    "IssueCommentAdded": "comment",
    "IssueCommentUpdated": "comment",
    "IssueCommentRemoved": "comment",
    "IssueCommentReactionAdded": "comment",  # a comment's reactions are part of its record
    "IssueCommentReactionRemoved": "comment",
    "IssueWorklogAdded": "worklog",
    "IssueWorklogUpdated": "worklog",
    "IssueWorklogRemoved": "worklog",
    "IssueLinked": "link",
    "IssueLinkChanged": "link",
    "IssueUnlinked": "link",
    "RelatedIssueResolutionChanged": "link",  # the other end's status, shown on the link
    "IssueAttachmentAdded": "attachment",
    "IssueAttachmentRemoved": "attachment",
}
# the documented types that change nothing but the issue's fields, its comments, worklogs,
# attachments, reactions and votes: a remote link, which has no type of its own, is not among
# them (an entry of any other type, or one naming a field of links, lists the remote links)
SAYS_NO_REMOTE_LINK = frozenset(
    {"IssueUpdated", "IssueWorkflow", "IssueVoteAdded", "IssueVoteRemoved",
     "RelatedIssueResolutionChanged"}
    | {kind for kind, listing in LISTING_OF_TYPE.items() if listing != "link"}
)  # fmt: skip
# what the changelog's new entries may leave unlisted when none of them names it (comments
# are told by the issue's counters, whatever the changelog says)
TOLD_BY_CHANGELOG = frozenset({"worklog", "link", "attachment", "remote_link"})
UNSETTLING = frozenset({"IssueCreated", "IssueMoved", "IssueCloned", ""})
COMMENT_COUNTERS = ("commentWithoutExternalMessageCount", "commentWithExternalMessageCount")


@dataclass(frozen=True)
class EarlierDrain:
    """What an earlier drain staged under one issue, read from the store."""

    drained_at: str | None  # the issue's updatedAt at its last drain (None: never drained)
    comments: list[dict[str, Any]]
    changelog: list[dict[str, Any]]

    @classmethod
    def read(cls, store: StagingStore, key: str) -> EarlierDrain:
        return cls(
            drained_at=store.drained_version(key),
            comments=[r.raw for r in store.iter_records("comment", parent=key)],
            changelog=[r.raw for r in store.iter_records("changelog", parent=key)],
        )

    def resume_after(self) -> str | None:
        """The changelog entry to list from (exclusive): the last one staged no later than the
        issue's last drain; None lists from the start."""
        if self.drained_at is None:
            return None
        drained = parse_time(self.drained_at)
        settled = [
            entry for entry in self.changelog if _before_or_at(entry.get("updatedAt"), drained)
        ]
        return max((str(entry["id"]) for entry in settled), default=None)

    def moved(self, updated_at: str | None) -> bool:
        """Whether the issue changed since its earlier drain (False: never drained)."""
        return self.drained_at is not None and self.drained_at != updated_at

    def newer(self, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The entries of a whole changelog made after the earlier drain read the issue
        (what it listed then was read after the issue, so it holds every older change)."""
        assert self.drained_at is not None  # only asked of an issue drained before
        drained = parse_time(self.drained_at)
        return [e for e in entries if not _before_or_at(e.get("updatedAt"), drained)]

    def settled_changelog(self, after: str | None) -> list[dict[str, Any]]:
        """The staged entries up to `after` (those after it are listed again)."""
        if after is None:
            return []
        return [entry for entry in self.changelog if str(entry["id"]) <= after]


def comments_unchanged(issue: dict[str, Any], staged: list[dict[str, Any]]) -> bool:
    """Whether the staged comments are the issue's: as many as its counters say, and none
    updated since the newest staged one."""
    counters = [issue.get(name) for name in COMMENT_COUNTERS]
    counted = [count for count in counters if isinstance(count, int)]
    if len(counted) != len(counters) or sum(counted) != len(staged):
        return False
    last = issue.get("lastCommentUpdatedAt")
    if not staged or not last:
        return not staged and not last
    newest = max(parse_time(str(c.get("updatedAt") or c["createdAt"])) for c in staged)
    return parse_time(str(last)) <= newest


def named_by(entries: list[dict[str, Any]]) -> set[str] | None:
    """The listings the changelog's new entries name; None when one is of a type that could
    concern a listing without saying which (an issue moved, cloned, ...)."""
    named: set[str] = set()
    for entry in entries:
        kind = str(entry.get("type") or "")
        if kind in UNSETTLING:
            return None
        if kind in LISTING_OF_TYPE:
            named.add(LISTING_OF_TYPE[kind])
        if kind not in SAYS_NO_REMOTE_LINK or _names_links(entry):
            named.add("remote_link")
    return named


def explains(entries: list[dict[str, Any]], updated_at: str | None) -> bool:
    """Whether the new entries account for the issue's move to `updated_at`: one of them is
    at it. A change the service leaves no entry for (a remote link or a checklist item, on a
    service that logs neither) moves `updatedAt` past every entry: then nothing is spared."""
    if not updated_at:
        return False
    try:
        moved_to = parse_time(updated_at)
    except ValueError:
        return False
    return any(_at(entry.get("updatedAt"), moved_to) for entry in entries)


def _at(value: Any, moment: Any) -> bool:
    try:
        return bool(value) and parse_time(str(value)) >= moment
    except ValueError:
        return False


def _names_links(entry: dict[str, Any]) -> bool:
    """Whether an entry changes a field about links (a remote link might be told so)."""
    fields = entry.get("fields") or []
    ids = [str((f.get("field") or {}).get("id") or "") for f in fields if isinstance(f, dict)]
    return any("link" in name.lower() for name in ids)


def listings_to_skip(
    issue: dict[str, Any],
    earlier: EarlierDrain,
    *,
    updated_at: str | None,
    new_entries: list[dict[str, Any]] | None,
) -> set[str]:
    """The listings this drain of `issue` may leave as staged; `new_entries` are the
    changelog's entries since `earlier.resume_after()` (None: the changelog was not read
    from a staged entry)."""
    skip = {"comment"} if comments_unchanged(issue, earlier.comments) else set()
    if not earlier.moved(updated_at) or new_entries is None:
        return skip
    named = named_by(new_entries) if explains(new_entries, updated_at) else None
    if named is None:
        return skip
    if "comment" in named:
        skip.discard("comment")  # an edit the counters may not show
    return skip | (TOLD_BY_CHANGELOG - named)


def _before_or_at(value: Any, moment: Any) -> bool:
    try:
        return bool(value) and parse_time(str(value)) <= moment
    except ValueError:
        return False
