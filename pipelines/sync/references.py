"""References in text: what a migrated text says about the source, pointed at the target.

Every text haul writes (descriptions, comments, page bodies, grid cells) goes through one
`References.rewrite`; the forms it knows are the ones the services' markdown writes::

    ![shot.png](/ajax/v2/attachments/<id>?inline=true)   an inline image (a file's id)
    [logs.zip](/<KEY>/attachments/<id>)                  a file link (its issue and id)
    either one as an absolute URL on the source's tracker web host
    @login  staff:login                                  a user (a login the source org has)
    https://<source web host>/<path>                     any other URL on a source web host

A file becomes the target's (`attachment`: its target issue key and id, None while it is not
in the target yet); a user the mapped login (`login`: None when the user has no target user
and no default: plain text, which pings no one); a URL on a source web host the same URL on
the target's host, its page slug moved (`page`). `scan` is verify's side: what a text the
target holds still says about the source (a source file id, a source web host, a login
mapped away). What is code (`pipelines.sync.markup`) is neither rewritten nor scanned.
`written_as` tells a text haul wrote from the same text written again with its files'
target ids (a three-way sync's base, `pipelines.sync.three_way`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from haul.pipelines.config import Config
from haul.pipelines.findings import Finding
from haul.pipelines.sync.markup import outside_code, sub_outside_code

# a relative reference starts a link target, a quoted value or a word
_STARTS = r"(?:(?<=[\s(<\"'=\[])|^)"
_FILE_PATH = r"/(?:ajax/v2/attachments/(?P<inline>[\w-]+)|(?P<key>[A-Z][A-Z0-9_]*-\d+)/attachments/(?P<file>[\w-]+))"
_ANY_HOST = r"https?://[^\s/()<>\"'\]]+"
_LOGIN = r"[A-Za-z0-9](?:[\w.-]*\w)?"
# the rest of a URL: up to a space or what closes a link, less a sentence's punctuation
_URL_REST = r"(?:[^\s()<>\"'\]]*[^\s()<>\"'\].,;:!?])?"


def _files(host: str) -> re.Pattern[str]:
    """File references, relative or absolute on `host` (a regex)."""
    return re.compile(rf"(?:(?P<host>{host})|{_STARTS}){_FILE_PATH}", re.MULTILINE)


ANY_FILE = _files(_ANY_HOST)  # whatever the host: what `haul plan` looks for
_MENTION = re.compile(rf"(?<![\w@.:/])(?P<form>@|staff:)(?P<login>{_LOGIN})")


def file_references(text: str | None) -> list[str]:
    """The file ids a text references, in either form, relative or on any host (not in code:
    `pipelines.sync.markup`)."""
    return [m.group("inline") or m.group("file") for m in outside_code(ANY_FILE, text or "")]


def without_file_ids(text: str | None) -> str:
    """The text with the ids of the files it shows blanked: the same before and after its
    files are in the target and its references rewritten (what finds a written text again)."""
    return sub_outside_code(ANY_FILE, _blank_id, text or "")


def _blank_id(match: re.Match[str]) -> str:
    which = "inline" if match.group("inline") else "file"
    start, end = match.span(which)
    return match.string[match.start() : start] + "*" + match.string[end : match.end()]


@dataclass(frozen=True)
class WebHosts:
    """A service's web address at the source and at the target (no trailing slash)."""

    source: str
    target: str

    @classmethod
    def of(cls, source: str | None, target: str | None) -> WebHosts | None:
        if not source or not target:
            return None
        return cls(source.rstrip("/"), target.rstrip("/"))

    @property
    def moves(self) -> bool:
        """Whether the target sits elsewhere (one cloud serves both orgs on one host)."""
        return self.source != self.target


def _unchanged(path: str) -> str | None:
    return path


def _nobody(login: str) -> str | None:
    return login


def _not_carried(file_id: str) -> tuple[str, str] | None:
    return None


@dataclass
class References:
    """The maps one run rewrites references with; see the module docstring.

    `logins` are the source org's logins (a mention of anything else is left as written),
    `attachment(id)` a source file's (target issue key, target id), `login(login)` a source
    login's target login, `page(path)` where a wiki path (a slug, or `slug/.files/name`)
    lands, None outside the migrated subtrees. What cannot be rewritten is counted in `left`
    ("what: why" -> how many), for the run's report.
    """

    logins: Collection[str] = ()
    attachment: Callable[[str], tuple[str, str] | None] = _not_carried
    login: Callable[[str], str | None] = _nobody
    page: Callable[[str], str | None] = _unchanged
    tracker: WebHosts | None = None
    wiki: WebHosts | None = None
    left: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        host = re.escape(self.tracker.source) if self.tracker else r"(?!)"
        self._files = _files(host)
        # (what, text) already counted: one text is rewritten for its send, its find, verify
        self._counted: set[tuple[str, int]] = set()

    def rewrite(self, text: str | None) -> str | None:
        """The text with every reference it can rewrite pointing at the target; what is
        code is written as it is (`pipelines.sync.markup`)."""
        if not text:
            return text
        source, notes = text, list[str]()
        text = sub_outside_code(self._files, self._file, text)
        text = sub_outside_code(_MENTION, lambda match: self._mention(match, notes), text)
        for hosts, path in ((self.wiki, self.page), (self.tracker, _unchanged)):
            if hosts is not None and hosts.moves:
                text = sub_outside_code(_on_host(hosts.source), self._url(hosts, path, notes), text)
        self.count(notes, source)
        return text

    def settled(self, text: str | None, where: str) -> str | None:
        """`rewrite` for a text nothing writes again: a file it shows that is not in the
        target is counted (`left`), naming `where`."""
        self.count(
            [
                f"file {file_id} shown in {where}: not in the target"
                for file_id in self.waiting(text)
            ],
            text or "",
        )
        return self.rewrite(text)

    def count(self, notes: list[str], text: str) -> None:
        """Count what could not be rewritten in `text`, once per text however often it is
        rewritten."""
        for what in notes:
            if (what, hash(text)) not in self._counted:
                self._counted.add((what, hash(text)))
                self.left[what] += 1

    def written_as(self, written: object, now: object) -> bool:
        """Whether `now` is the text haul wrote as `written` (a base), once haul wrote it again
        with its files' target ids (the tracker's `children.texts`): the same text, each file id the same or
        the source file's target id. A file id changed otherwise is a change of the text."""
        if written == now:
            return True
        if not isinstance(written, str) or not isinstance(now, str):
            return False
        if without_file_ids(written) != without_file_ids(now):
            return False
        pairs = zip(file_references(written), file_references(now), strict=True)
        return all(old == new or self._patched_to(old) == new for old, new in pairs)

    def _patched_to(self, file_id: str) -> str | None:
        found = self.attachment(file_id)
        return None if found is None else found[1]

    def waiting(self, text: str | None) -> list[str]:
        """The file ids a text references that are not in the target (yet)."""
        return [m.group("inline") or m.group("file") for m in self._unresolved(text or "")]

    def _unresolved(self, text: str) -> Iterator[re.Match[str]]:
        for match in outside_code(self._files, text):
            if self.attachment(match.group("inline") or match.group("file")) is None:
                yield match

    def _file(self, match: re.Match[str]) -> str:
        found = self.attachment(match.group("inline") or match.group("file"))
        if found is None:  # not in the target yet: the text is patched once it is
            return match.group(0)
        key, target_id = found
        host = self.tracker.target if match.group("host") and self.tracker else ""
        if match.group("inline"):
            return f"{host}/ajax/v2/attachments/{target_id}"
        return f"{host}/{key}/attachments/{target_id}"

    def _mention(self, match: re.Match[str], notes: list[str]) -> str:
        login = match.group("login")
        if login not in self.logins:
            return match.group(0)
        mapped = self.login(login)
        if mapped is None:
            notes.append(f"mention of {login}: no target user, written as plain text")
            return login
        return match.group("form") + mapped

    def _url(
        self, hosts: WebHosts, path: Callable[[str], str | None], notes: list[str]
    ) -> Callable[[re.Match[str]], str]:
        def swap(match: re.Match[str]) -> str:
            rest, tail = _split_tail(match.group("path"))
            if not rest.strip("/"):
                return hosts.target + match.group("path")
            moved = path(rest.strip("/"))
            if moved is None:
                notes.append(f"{match.group(0)}: not migrated, left pointing at the source")
                return match.group(0)
            return f"{hosts.target}/{moved}{tail}" if moved else hosts.target + tail

        return swap


def _on_host(host: str) -> re.Pattern[str]:
    # not a longer host that starts the same (`https://wiki.example.org.evil`)
    return re.compile(rf"{re.escape(host)}(?P<path>(?:[/?#]{_URL_REST})?)(?![\w-]|\.\w)")


def _split_tail(path: str) -> tuple[str, str]:
    """A URL path and its query or anchor."""
    cut = min((path.index(mark) for mark in "?#" if mark in path), default=len(path))
    return path[:cut], path[cut:]


@dataclass(frozen=True)
class SourceScan:
    """What verify looks for in the texts the target holds: source file ids (`files`, less
    the target's own ids), source web hosts that the target does not share, and logins the
    users mapping maps away (a mention of one pings whoever holds it in the target)."""

    files: Collection[str] = ()
    hosts: tuple[WebHosts, ...] = ()
    mapped_away: Collection[str] = ()

    def scan(self, text: str) -> list[str]:
        """Each reference to the source in `text`, as written; none in code (haul writes code
        as it is: `pipelines.sync.markup`)."""
        found = [
            m.group(0)
            for m in outside_code(ANY_FILE, text)
            if (m.group("inline") or m.group("file")) in self.files
        ]
        for hosts in self.hosts:
            if hosts.moves:
                found += [m.group(0) for m in outside_code(_on_host(hosts.source), text)]
        found += [
            m.group(0) for m in outside_code(_MENTION, text) if m.group("login") in self.mapped_away
        ]
        return found

    def scan_fields(self, fields: Mapping[str, object]) -> Iterator[tuple[str, str]]:
        """(field, reference) for each reference in the text fields of a record read back."""
        for name, value in fields.items():
            for text in _texts(value):
                for reference in self.scan(text):
                    yield name, reference


def _texts(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _texts(item)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _texts(item)


def moved_slug(roots: Collection[str], mapping: Mapping[str, str]) -> Callable[[str], str | None]:
    """Where a wiki path (a slug, or `slug/.files/name`) lands: under the longest configured
    root that holds it, that root's target (`[mapping] wiki_roots`, default the same); None
    outside every root."""

    def moved(path: str) -> str | None:
        holders = [root for root in roots if path == root or path.startswith(root + "/")]
        if not holders:
            return None
        root = max(holders, key=len)
        return mapping.get(root, root) + path[len(root) :]

    return moved


def web_hosts(config: Config) -> tuple[WebHosts | None, WebHosts | None]:
    """(tracker, wiki) web hosts, source and target, where both are configured."""
    target = config.target
    if target is None:
        return None, None
    return (
        WebHosts.of(config.source.tracker_web_url, target.tracker_web_url),
        WebHosts.of(config.source.wiki_web_url, target.wiki_web_url),
    )


_ABSOLUTE = re.compile(rf"(?P<host>{_ANY_HOST})(?P<path>/{_URL_REST})?")
# a path on the tracker's web host: an issue (its page, a file of it), or an inline image
_TRACKER_PATH = re.compile(
    r"/(?:(?P<key>[A-Z][A-Z0-9_]*-\d+)(?![\w-])|ajax/v2/attachments/(?P<file>[\w-]+))"
)


@dataclass(frozen=True)
class SourcePaths:
    """Which paths on a web host are the source's: its issues (of a migrated queue, or a
    staged key), its staged files, its migrated wiki roots. What `haul check` tells links to
    the source by, while the source's web address is not configured."""

    queues: Collection[str] = ()
    keys: Collection[str] = ()
    files: Collection[str] = ()
    roots: Collection[str] = ()

    def tracker(self, path: str) -> bool:
        match = _TRACKER_PATH.match(path)
        if match is None:
            return False
        if match["file"]:
            return match["file"] in self.files
        return match["key"] in self.keys or match["key"].rpartition("-")[0] in self.queues

    def wiki(self, path: str) -> bool:
        return moved_slug(self.roots, {})(_split_tail(path)[0].strip("/")) is not None


def hosts_linked(
    texts: Iterable[str | None], points_in: Callable[[str], bool]
) -> tuple[int, Counter[str]]:
    """How many of `texts` link by an absolute URL whose path (and query) `points_in` the
    source, and host -> how many of them link to it."""
    linking, hosts = 0, Counter[str]()
    for text in texts:
        found = {m["host"] for m in _ABSOLUTE.finditer(text or "") if points_in(m["path"] or "/")}
        linking += bool(found)
        hosts.update(found)
    return linking, hosts


def unset_web_hosts(
    config: Config, paths: SourcePaths, texts: Callable[[], Iterable[str | None]], where: str
) -> list[Finding]:
    """A warning per web address (`tracker_web_url`, `wiki_web_url`) not set on both sides
    while staged `where` texts link to the source on it: those links would be left as written,
    pointing at the source. A warning, not an error: the host is told from the links' paths
    alone (another instance could share them), and a source kept readable may be meant."""
    tracker, wiki = web_hosts(config)
    unset = (
        [("tracker_web_url", "the source's issues and files", paths.tracker)]
        if tracker is None
        else []
    )
    if wiki is None and paths.roots:
        unset.append(("wiki_web_url", "pages of the migrated wiki roots", paths.wiki))
    found = []
    for key, what, points_in in unset:
        linking, hosts = hosts_linked(texts(), points_in)
        if linking:
            named = ", ".join(host for host, _ in hosts.most_common())
            found.append(Finding(
                "warning",
                f"{linking} staged {where} text(s) link to {what} on {named} by absolute URL, and"
                f" {key} is not set in [source] and [target]: those links would keep pointing at"
                " the source",
                f"set [source] {key} (the source's web address: {hosts.most_common(1)[0][0]}, if"
                f" that is it) and [target] {key}, then check again",
            ))  # fmt: skip
    return found


def mention_login(
    explicit: dict[str, str], target_logins: set[str], default: str | None
) -> Callable[[str], str | None]:
    """A mentioned source login's target login: the users file, the same login, the configured
    default user (never the token's own user: a mention of a stranger pings no one), else None."""

    def login(source: str) -> str | None:
        if source in explicit:
            return explicit[source]
        return source if source in target_logins else default

    return login
