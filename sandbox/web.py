"""Where an organisation's services would show in a browser: the web hosts its texts link to.

The real services answer their APIs on one host and show pages on another (the tracker's
issues at `https://<tracker web>/DEV-12`, its files at `/ajax/v2/attachments/<id>`, wiki pages
at `https://<wiki web>/<slug>`). Each sandbox organisation has hosts of its own, so a text of
the source that links to the source's web host is told apart from one that links to the
target's. Nothing is served there: they are names in text (the `.test` domain resolves nowhere).
"""

from __future__ import annotations


def web_urls(org_id: str) -> dict[str, str]:
    """The organisation's web addresses: ``{"tracker": ..., "wiki": ...}``."""
    return {
        "tracker": f"https://tracker-{org_id}.sandbox.test",
        "wiki": f"https://wiki-{org_id}.sandbox.test",
    }
