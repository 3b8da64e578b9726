"""`haul` with a bug planted under it, for the tests of what a crashed run leaves.

Run as `python crash_launcher.py <haul arguments>`: the same command line as `haul`, except
that every request to an `_import` path raises RuntimeError from inside aiohttp's request
call, where the request's headers (the token) are in the frames. haul meets it as it would
meet a bug of its own or of a library: an internal error.
"""

from __future__ import annotations

from typing import Any

import aiohttp

from haul.pipelines.cli import main

_request = aiohttp.ClientSession.request


def _request_with_a_bug(self: aiohttp.ClientSession, method: str, url: Any, **options: Any) -> Any:
    headers = options.get("headers")  # held here as a real bug's frame would hold them
    if str(url).endswith("/_import") and headers:
        raise RuntimeError("a planted bug under an import request")
    return _request(self, method, url, **options)


if __name__ == "__main__":
    aiohttp.ClientSession.request = _request_with_a_bug  # type: ignore[method-assign]
    main()
