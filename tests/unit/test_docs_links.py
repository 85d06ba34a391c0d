"""Every relative link in README.md and docs/*.md points to a file of the repository, and
every ``#anchor`` to a heading of its page (GitHub's heading slugs), so a newcomer who
follows the README never lands on a missing page or section. The README's pages also say
every setting the settings model has, so a new setting cannot go undocumented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core.settings import Settings

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())  # link text
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {_slug(m) for m in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def _links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return [t for t in LINK.findall(text) if not re.match(r"^[a-z]+:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in _links(page):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.name}")
    assert not broken, broken


def test_the_slug_follows_github() -> None:
    assert _slug("Live thresholds (`memstream config set|get|unset`)") == (
        "live-thresholds-memstream-config-setgetunset"
    )
    assert _slug("Replicas: routing by user") == "replicas-routing-by-user"
    assert _slug("Retrying and idempotent writes (`request_id`)") == (
        "retrying-and-idempotent-writes-request_id"
    )


def test_every_setting_is_documented() -> None:
    text = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    missing = [n for n in Settings.model_fields if f"`{n}`" not in text]
    assert not missing, missing
