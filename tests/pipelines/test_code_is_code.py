"""Code is code: what a text holds in code (fenced, inline, the wiki markup's %%...%% and
""...""), references are not rewritten in, nor counted by verify as left at the source."""

from __future__ import annotations

import pytest

from haul.pipelines.sync.markup import code_spans
from haul.pipelines.sync.references import References, SourceScan, WebHosts, without_file_ids
from haul.pipelines.tracker.transform import QueueMap
from haul.pipelines.wiki.content import Rewriter, SlugMap

pytestmark = pytest.mark.fast

TRACKER = WebHosts("https://tracker.src.test", "https://tracker.dst.test")
WIKI = WebHosts("https://wiki.src.test", "https://wiki.dst.test")
# a mention, a file, a source URL and a key, as a person writes them in prose or in code
REFERENCES = "@alice ![a](/ajax/v2/attachments/101) https://wiki.src.test/team/a TEST-3"
UNCLOSED = "```\n{}"  # code to the text's end
CODE_FORMS = {
    "fenced": "```sh\n{}\n```",
    "fenced with tildes": "~~~\n{}\n~~~",
    "a fence never closed": UNCLOSED,
    "inline": "`{}`",
    "inline, two backticks": "``a ` {}``",
    "wiki code": "%%{}%%",
    "wiki code block": "%%(bash)\n{}\n%%",
    "wiki no-format": '""{}""',
}


def refs() -> References:
    return References(
        logins={"alice"},
        attachment={"101": ("NEW-3", "9001")}.get,
        login={"alice": "alice.new"}.get,
        tracker=TRACKER,
        wiki=WIKI,
    )


@pytest.mark.parametrize("form", CODE_FORMS.values(), ids=list(CODE_FORMS))
def test_references_in_code_are_written_as_they_are_and_those_around_it_rewritten(
    form: str,
) -> None:
    code = form.format(REFERENCES)
    rewritten = refs().rewrite(f"{REFERENCES}\n\n{code}")
    assert rewritten == (
        f"@alice.new ![a](/ajax/v2/attachments/9001) https://wiki.dst.test/team/a TEST-3\n\n{code}"
    )
    if form != UNCLOSED:
        assert refs().rewrite(f"{code}\nafter @alice") == f"{code}\nafter @alice.new"


@pytest.mark.parametrize("form", CODE_FORMS.values(), ids=list(CODE_FORMS))
def test_verify_counts_no_reference_in_code(form: str) -> None:
    """A source URL, a source file id or a login mapped away in code is no reference left."""
    scan = SourceScan(files={"101"}, hosts=(WIKI,), mapped_away={"alice"})
    assert scan.scan(form.format(REFERENCES)) == []
    assert len(scan.scan(REFERENCES)) == 3


@pytest.mark.parametrize("form", CODE_FORMS.values(), ids=list(CODE_FORMS))
def test_keys_and_wiki_links_in_code_are_left_as_written(form: str) -> None:
    code = form.format("TEST-3 [a](/team/a)")
    assert QueueMap({"TEST": "NEW"}).rewrite(f"TEST-3\n{code}") == f"NEW-3\n{code}"
    rewriter = Rewriter(SlugMap(("team",), {"team": "crew"}), {"TEST": "NEW"})
    assert rewriter.rewrite(f"[a](/team/a)\n{code}", "team") == f"[a](/crew/a)\n{code}"


def test_a_file_shown_only_in_code_is_no_file_the_text_shows() -> None:
    """Nothing patches it in, nothing waits for it, and its id is part of the text."""
    code = "`![a](/ajax/v2/attachments/555)`"
    assert refs().waiting(code) == []
    assert without_file_ids(code) == code


def test_a_cut_is_no_code_and_an_unpaired_mark_opens_none() -> None:
    """A cut folds ordinary text; a lone backtick or %% makes no code of what follows."""
    assert code_spans("<{more\n@alice\n}>") == []
    assert code_spans("a ` b @alice") == []
    assert code_spans("100%% sure @alice") == []
    assert refs().rewrite("<{more\n@alice\n}>") == "<{more\n@alice.new\n}>"
