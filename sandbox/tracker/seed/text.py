"""Realistic issue text: English, Cyrillic, CJK and emoji, markdown, and mentions of other keys."""

from __future__ import annotations

import random
from collections.abc import Sequence

_SUMMARIES = (
    "Login page returns 500 after deploy",
    "Add CSV export to the weekly report",
    "Flaky test in payments pipeline",
    "Migrate cron jobs to the scheduler",
    "Update onboarding docs for new hires",
    "Ошибка при сохранении профиля пользователя",
    "Добавить фильтр по дате в отчёт",
    "Медленная загрузка страницы поиска",
    "注文一覧のページングが壊れている",
    "登录后页面空白",
    "Rate limiter drops valid requests 🚦",
    "Dashboard colours unreadable in dark mode 🌙",
    "Release checklist for v{n}.{m} 🚀",
    "Über-long titles get truncated in the sidebar",
    "Support emoji in comment reactions 😀👍",
)
_SENTENCES = (
    "The service answers slowly under load.",
    "Steps to reproduce are below.",
    "We agreed to ship this in the next sprint.",
    "Проверил на стенде, воспроизводится стабильно.",
    "Нужно согласовать с командой аналитики.",
    "ログを添付しました。",
    "请在周五之前完成。",
    "Looks good to me 👍",
    "Blocked until the database migration lands 🧱",
    "Can we get numbers from production first? 📈",
)
_CODE = ("curl -s localhost:8080/health", "SELECT count(*) FROM orders;", "make test")


def summary(rng: random.Random) -> str:
    return rng.choice(_SUMMARIES).format(n=rng.randrange(1, 9), m=rng.randrange(0, 20))


def paragraph(rng: random.Random, mentions: Sequence[str] = ()) -> str:
    """One to four sentences, sometimes pointing at another issue ("see TEST-12")."""
    text = " ".join(rng.choices(_SENTENCES, k=rng.randrange(1, 5)))
    if mentions and rng.random() < 0.4:
        text += f" See {rng.choice(mentions)}."
    return text


def description(rng: random.Random, mentions: Sequence[str] = ()) -> str:
    """A markdown description: heading, prose, a list, sometimes a code block."""
    parts = [
        f"## {rng.choice(('Context', 'Контекст', '背景', 'Problem'))}",
        paragraph(rng, mentions),
    ]
    parts += [f"- {rng.choice(_SENTENCES)}" for _ in range(rng.randrange(0, 4))]
    if rng.random() < 0.3:
        parts.append(f"```\n{rng.choice(_CODE)}\n```")
    if mentions and rng.random() < 0.5:
        parts.append(f"Related: **{rng.choice(mentions)}**")
    return "\n\n".join(parts)


def comment(rng: random.Random, mentions: Sequence[str] = ()) -> str:
    text = paragraph(rng, mentions)
    if rng.random() < 0.2:
        text = f"> {rng.choice(_SENTENCES)}\n\n{text}"
    if rng.random() < 0.15:
        text += f"\n\n`{rng.choice(_CODE)}`"
    return text


def checklist_item(rng: random.Random) -> str:
    return rng.choice(
        (
            "Write tests",
            "Update the changelog",
            "Проверить на стенде",
            "Согласовать с дизайнером",
            "レビューを依頼する",
            "部署到生产环境",
            "Ping the on-call 📟",
            "Close the incident ✅",
        )
    )
