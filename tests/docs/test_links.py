"""Every link and image in README.md and docs/**/*.md works: relative ones resolve to a file or
directory of the repository, anchors match a heading (GitHub's slugs), absolute ones are
well-formed URLs of public sites. See tests/docs/markdown_links.py; no network is used."""

import pytest

from app.docs import slugify
from tests.docs.markdown_blocks import REPO_ROOT, doc_files, rel
from tests.docs.markdown_links import anchors, link_problems, links

FILES = doc_files()


@pytest.mark.parametrize("path", FILES, ids=[rel(p, REPO_ROOT) for p in FILES])
def test_links_resolve(path):
    problems = link_problems(path)
    assert not problems, "broken links:\n  " + "\n  ".join(problems)


def test_the_docs_link_to_each_other():
    assert any(link.target.startswith("docs/") for link in links(REPO_ROOT / "README.md"))


@pytest.mark.parametrize(
    ("heading", "slug"),
    [
        ("Set up", "set-up"),
        ("Behind a reverse proxy", "behind-a-reverse-proxy"),
        ("`POST /api/v1/simulate`", "post-apiv1simulate"),
        ("Part 2: consumers, groups & transactions", "part-2-consumers-groups--transactions"),
        ("acks=all, min.insync.replicas", "acksall-mininsyncreplicas"),
        ("What's `log_end_offset`?", "whats-log_end_offset"),
        ("Ünïcode Überschrift", "ünïcode-überschrift"),
        ("Cafe\u0301 au lait", "cafe\u0301-au-lait"),  # a combining mark stays, as on GitHub
    ],
)
def test_github_slug(heading, slug):
    assert slugify(heading) == slug


def test_repeated_headings_get_numbered_anchors(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Docs\n\n## Example\n\n## Example\n\n### Example\n\n## `code` *and* [link](x)\n")
    assert anchors(page) == {"docs", "example", "example-1", "example-2", "code-and-link"}
