"""Where a text is code: the parts no rewriting of references touches.

Both services write markdown (the tracker's, the wiki's extended markdown) and read the older
wiki markup's code and no-format spans as well::

    ```lang ... ```   ~~~ ... ~~~   a fenced block (a fence never closed runs to the text's end)
    `code`   ``a ` b``              inline code (a run of backticks, closed by as many)
    %%code%%   %%(lang) ...%%       the wiki markup's code, inline or a block of lines
    ""text""                        the wiki markup's no-format span (within one line)

A mention, a file, a key, a link or a URL written there is code a person wrote (`git log
--author=@alice`), not a reference: haul writes it as it is, and verify does not count it
among the references left pointing at the source. A cut (`<{title ... }>`) is no code: the
text it folds is ordinary text, rewritten as any other.

    code_spans(text)                   -> [(start, end), ...]
    sub_outside_code(pattern, repl, text)   re.sub, but never inside code
    outside_code(pattern, text)        re.finditer, but never inside code
"""

from __future__ import annotations

import re
import sys
from bisect import bisect_right
from collections.abc import Callable, Iterator

_FENCED = (
    r"(?ms:^[ ]{0,3}(?P<fence>`{3,}|~{3,})[^\n]*(?:\n.*?^[ ]{0,3}(?P=fence)[`~]*[ \t]*$|.*\Z))"
)
_INLINE = r"(?P<ticks>`+)(?!`)(?s:.+?)(?<!`)(?P=ticks)(?!`)"
_WIKI_CODE = r"(?s:%%.+?%%)"
_NO_FORMAT = r'""[^\n]+?""'
_CODE = re.compile("|".join((_FENCED, _INLINE, _WIKI_CODE, _NO_FORMAT)))

Spans = list[tuple[int, int]]


def code_spans(text: str) -> Spans:
    """Where `text` is code, as (start, end) offsets, in order (see the module docstring)."""
    return [match.span() for match in _CODE.finditer(text)]


def _inside(spans: Spans, at: int) -> bool:
    """Whether offset `at` lies in one of `spans` (ordered and apart)."""
    i = bisect_right(spans, (at, sys.maxsize)) - 1  # the last span starting at or before `at`
    return i >= 0 and spans[i][0] <= at < spans[i][1]


def sub_outside_code(
    pattern: re.Pattern[str], repl: Callable[[re.Match[str]], str], text: str
) -> str:
    """`pattern.sub(repl, text)`, each match that starts inside code left as written."""
    spans = code_spans(text)
    if not spans:
        return pattern.sub(repl, text)
    return pattern.sub(lambda m: m.group(0) if _inside(spans, m.start()) else repl(m), text)


def outside_code(pattern: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    """`pattern.finditer(text)`, but the matches that start inside code."""
    spans = code_spans(text)
    return (match for match in pattern.finditer(text) if not _inside(spans, match.start()))
