"""What `haul check` finds for forms beyond the token probe, asking the source org itself
(so before any extract too): every survey the config names exists, and every `[[backfill]]`
template names only questions its survey has. The load refuses such a rule (exit 2); check
says so first, with the same key path.
"""

from __future__ import annotations

from haul.connectors.forms import FormsClient
from haul.pipelines.config import Config
from haul.pipelines.findings import Finding
from haul.pipelines.forms.staged import question_slugs, template_problems

FIX_TEMPLATE = "name one of the survey's question slugs"


async def forms_checks(config: Config, client: FormsClient) -> list[Finding]:
    """The configured surveys and the back-fill rules against the source org."""
    named = [] if config.scope.surveys == "all" else list(config.scope.surveys)
    named += [rule.survey for rule in config.backfill if rule.survey not in named]
    slugs: dict[str, list[str]] = {}
    found = []
    for survey in named:
        if await client.find_survey(survey) is None:
            found.append(Finding("error", f"survey {survey} does not exist in the forms source org",
                                 "correct the survey id in scope.surveys or [[backfill]]"))  # fmt: skip
        else:
            slugs[survey] = question_slugs(await client.list_questions(survey))
    for index, rule in enumerate(config.backfill):
        if rule.survey in slugs:
            for key, problem in template_problems(index, rule, slugs[rule.survey]):
                found.append(Finding("error", f"{key}: {problem}", FIX_TEMPLATE))
    if named and not found:
        found.append(Finding("ok", "every survey exists and every back-fill template names its questions"))  # fmt: skip
    return found
