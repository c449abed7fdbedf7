"""The pages of the docs, in the order a reader takes them, and their fenced blocks.

:data:`GUIDE` is the README and the guide in the order of docs/index.md's table, with
troubleshooting.md right after the quickstart whose job it inspects; the examples' READMEs
follow in the order of their paths. The docs test runs the pages in this order against one
control plane, so a page may rely on what the pages before it left (:mod:`tests.docs.runner`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from tests.docs import blocks

REPOSITORY: Final = Path(__file__).resolve().parents[2]

GUIDE: Final = (
    "README.md",
    "docs/index.md",
    "docs/quickstart.md",
    "docs/troubleshooting.md",
    "docs/jobs.md",
    "docs/containers.md",
    "docs/progress.md",
    "docs/dashboard.md",
    "docs/initializers.md",
    "docs/trl.md",
    "docs/llm.md",
    "docs/kubectl.md",
    "docs/scheduling.md",
    "docs/sdk.md",
    "docs/cluster.md",
    "docs/migrating.md",
    "docs/reliability.md",
)


def guide_on_disk() -> set[str]:
    """The README and every page under docs/, whether :data:`GUIDE` lists it or not."""
    return {
        "README.md",
        *(str(p.relative_to(REPOSITORY)) for p in (REPOSITORY / "docs").glob("*.md")),
    }


def example_pages() -> list[str]:
    return sorted(str(p.relative_to(REPOSITORY)) for p in (REPOSITORY / "examples").rglob("*.md"))


def pages() -> tuple[str, ...]:
    return (*GUIDE, *example_pages())


def page_blocks(page: str) -> list[blocks.Block]:
    return blocks.blocks((REPOSITORY / page).read_text(encoding="utf-8"), page)
