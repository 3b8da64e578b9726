"""Attachment contents: generated ones are regenerated in chunks from a seed, uploaded ones are kept.

A generated several-megabyte attachment is never held in memory as a whole: each 64 KiB chunk
is derived from ``(token, chunk index)``, so any download produces the same bytes in any order.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator
from dataclasses import dataclass

CHUNK = 64 * 1024

# the first bytes real files of these kinds start with, so previews and sniffers behave
_MAGIC = {
    "image/png": b"\x89PNG\r\n\x1a\n",
    "application/pdf": b"%PDF-1.7\n",
    "application/zip": b"PK\x03\x04",
}
_WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "status",
    "queue",
    "issue",
    "report",
    "deploy",
    "rollback",
    "metric",
    "latency",
    "incident",
    "owner",
    "sprint",
    "backlog",
    "release",
    "hotfix",
    "review",
    "build",
    "pipeline",
    "cache",
    "index",
]


def chunk_rng(token: str, index: int) -> random.Random:
    digest = hashlib.sha256(f"{token}/{index}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


@dataclass(frozen=True, slots=True)
class GeneratedBlob:
    """Deterministic content of ``size`` bytes: text for ``text/*`` types, random bytes otherwise."""

    token: str
    size: int
    mimetype: str

    def chunks(self) -> Iterator[bytes]:
        produced = 0
        index = 0
        while produced < self.size:
            chunk = self._chunk(index)[: self.size - produced]
            produced += len(chunk)
            index += 1
            yield chunk

    def _chunk(self, index: int) -> bytes:
        rng = chunk_rng(self.token, index)
        body = _text_chunk(rng) if self.mimetype.startswith("text/") else rng.randbytes(CHUNK)
        if index == 0:
            body = _MAGIC.get(self.mimetype, b"") + body
        return body[:CHUNK]


def _text_chunk(rng: random.Random) -> bytes:
    lines = []
    size = 0
    while size < CHUNK:
        line = f"{rng.randrange(10_000):05d} " + " ".join(rng.choices(_WORDS, k=12)) + "\n"
        lines.append(line)
        size += len(line)
    return "".join(lines).encode("ascii")


@dataclass(frozen=True, slots=True)
class StoredBlob:
    """Bytes uploaded through an import, served back in chunks."""

    data: bytes

    @property
    def size(self) -> int:
        return len(self.data)

    def chunks(self) -> Iterator[bytes]:
        view = memoryview(self.data)
        for start in range(0, len(view), CHUNK):
            yield bytes(view[start : start + CHUNK])


Blob = GeneratedBlob | StoredBlob
