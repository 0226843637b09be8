"""The docs in the app: /docs renders every docs/*.md (app/docs.py), links between pages and to
anchors resolve inside the app, unknown names and traversal attempts are 404 pages that list
the docs, and /openapi.json and /api/v1/scenario.schema.json describe the API (app/openapi.py).
tests/docs runs docs/http-api.md's requests against the app; here, the two answers it cannot get
from the default app in time are checked against apps with other limits."""

from __future__ import annotations

import copy
import json
import re
import warnings
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from markdown_it import MarkdownIt

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from app.docs import DocsSite, slugify
from app.main import create_app
from app.openapi import PUBLIC_PATHS
from app.settings import REPO_ROOT, Settings
from engine.schema import scenario_json_schema

SITE = DocsSite(REPO_ROOT)
PAGES = SITE.pages()
HTTP_API = REPO_ROOT / "docs" / "http-api.md"


class _Page(HTMLParser):
    """A docs page's ids, its links (href, inside the article or not) and its <title>."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.links: list[tuple[str, bool]] = []
        self.title = ""
        self._in_title = False
        self._article_depth = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.append(a["id"])
        if tag == "article":
            self._article_depth += 1
        if tag == "a" and a.get("href") is not None:
            self.links.append((a["href"], self._article_depth > 0))
        if tag == "title":
            self._in_title = True

    def handle_endtag(self, tag):
        if tag == "article":
            self._article_depth -= 1
        if tag == "title":
            self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title += data


def parse(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    return page


# -- every page renders ---------------------------------------------------------------------------


def test_the_docs_folder_has_pages_and_the_readme_is_one():
    assert "http-api" in PAGES and "readme" in PAGES
    assert all(re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*|", name) for name in PAGES)


@pytest.mark.parametrize("name", sorted(PAGES))
def test_every_docs_page_renders_with_its_title_and_no_raw_comment(client, name):
    page = PAGES[name]
    r = client.get(page.url)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    html = r.text
    title = SITE.render(page).title
    parsed = parse(html)
    assert (title if name else "Docs") in parsed.title
    assert "<!--" not in html and "-->" not in html  # comments dropped, other HTML escaped
    assert 'class="site-header"' in html and '<article class="doc' in html  # the course's look
    assert len(parsed.ids) == len(set(parsed.ids)), "duplicate ids"
    assert r.headers["cache-control"] == "no-cache" and r.headers["etag"].startswith('W/"')
    assert r.headers["content-security-policy"].startswith("default-src 'self'")
    again = client.get(page.url, headers={"If-None-Match": r.headers["etag"]})
    assert again.status_code == 304 and not again.content


def test_a_code_host_link_to_a_md_file_redirects_to_the_page(client):
    r = client.get("/docs/http-api.md", follow_redirects=False)
    assert r.status_code == 308 and r.headers["location"] == "/docs/http-api"
    if "" in PAGES:
        r = client.get("/docs/README.md", follow_redirects=False)
        assert r.status_code == 308 and r.headers["location"] == "/docs"


def _crawl(client) -> dict[str, _Page]:
    """Every docs page reachable from /docs by links, parsed."""
    seen: dict[str, _Page] = {}
    todo = ["/docs"]
    while todo:
        url = todo.pop()
        if url in seen:
            continue
        r = client.get(url)
        assert r.status_code == 200, url
        seen[url] = parse(r.text)
        for href, _ in seen[url].links:
            path = urlsplit(href).path
            if path.startswith("/docs") and path not in seen:
                todo.append(path)
    return seen


def test_links_inside_the_docs_resolve_in_the_app_and_anchors_exist(client):
    pages = _crawl(client)
    assert {p.url for p in PAGES.values()} <= set(pages), "a docs page is not linked from the others"
    checked: dict[str, int] = {}
    for url, page in pages.items():
        for href, in_article in page.links:
            parts = urlsplit(href)
            if parts.scheme or parts.netloc:
                assert parts.scheme in ("https", "http", "mailto"), href
                continue
            target = parts.path or url
            assert target.startswith("/"), f"{url}: relative link {href!r} left unrewritten"
            assert ".md" not in target, f"{url}: {href!r} points at a Markdown file"
            if target not in pages and target not in checked:
                checked[target] = client.get(target).status_code
            status = 200 if target in pages else checked[target]
            assert status == 200, f"{url}: {href} answers {status}"
            if parts.fragment and target in pages:
                assert parts.fragment in pages[target].ids, f"{url}: no #{parts.fragment} on {target}"
            if in_article and not parts.fragment:
                assert href != "#"


def test_headings_have_github_ids_and_self_links(client):
    html = client.get("/docs/http-api").text
    assert '<h2 id="run-a-scenario-post-apiv1simulate">' in html
    assert 'href="#run-a-scenario-post-apiv1simulate"' in html
    assert 'class="doc-toc"' in html  # a long page gets its table of contents


# -- unknown names and traversal ----------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/docs/no-such-page",
        "/docs/..%2Fapp%2Fmain",
        "/docs/%2e%2e%2fREADME",
        "/docs/%2E%2E/pyproject.toml",
        "/docs/..%5c..%5cetc%5cpasswd",
        "/docs/.hidden",
        "/docs/http-api%00",
        "/docs/http-api/extra",
        "/docs/engine%2Fscenario",
        "/docs/" + "x" * 300,
    ],
)
def test_unknown_names_and_traversal_are_a_404_page_listing_the_docs(client, path):
    r = client.get(path, follow_redirects=False)
    assert r.status_code == 404 and r.headers["content-type"].startswith("text/html")
    html = r.text
    for page in PAGES.values():
        assert f'href="{page.url}"' in html
    assert "No such docs page" in html and "[project]" not in html and "import " not in html


def test_the_footer_and_the_course_map_link_to_the_docs(client):
    for path in ("/", "/glossary", "/docs/http-api"):
        assert 'href="/docs"' in client.get(path).text, path


# -- the renderer on its own --------------------------------------------------------------------


def _site(tmp_path: Path, files: dict[str, str]) -> DocsSite:
    (tmp_path / "docs").mkdir()
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return DocsSite(tmp_path)


def test_links_are_rewritten_to_pages_and_repository_files_become_code(tmp_path):
    site = _site(tmp_path, {
        "README.md": "# Repo\n",
        "docs/README.md": "# Index\n",
        "docs/other.md": "# Other\n",
        "docs/a.md": "# A\n\n"
        "[o](other.md) [ox](other.md#part-two) [i](README.md) [r](../README.md#set-up)\n"
        "[the models](../engine/scenario.py) [`engine/scenario.py`](../engine/scenario.py)\n"
        "[gone](missing.md) [out](../../etc/passwd) [web](https://kafka.apache.org/) [h](#a)\n"
        "[engine/steps.py](../engine/steps.py)\n"
        "[abs](/openapi.json) ![a diagram](pic.png)\n",
    })  # fmt: skip
    html = site.render(site.pages()["a"]).intro_html
    for expected in (
        '<a href="/docs/other">o</a>', '<a href="/docs/other#part-two">ox</a>', '<a href="/docs">i</a>',
        '<a href="/docs/readme#set-up">r</a>', '<a href="https://kafka.apache.org/" rel="noopener">web</a>',
        '<a href="#a">h</a>', '<a href="/openapi.json">abs</a>',
        'the models (<code>engine/scenario.py</code>)',
        '<span class="doc-path"><code>engine/scenario.py</code></span>',
        'gone (<code>docs/missing.md</code>)', '[a diagram]',
        '<span class="doc-path"><code>engine/steps.py</code></span>',
    ):  # fmt: skip
        assert expected in html, expected
    assert html.count("<a ") == 7 and "pic.png" not in html and "passwd</code>" in html


def test_no_raw_html_reaches_the_page_and_comments_vanish(tmp_path):
    site = _site(tmp_path, {"docs/x.md": (
        "# X\n\n<!-- not run: a reason -->\n```json response 200\n{\"a\": \"<b>\"}\n```\n\n"
        "Text <script>alert(1)</script> and <!-- inline --> more.\n\n<div onclick=\"x()\">raw</div>\n\n"
        "<!--\nmulti\nline\n-->\n\n    indented <i>code</i>\n"
    )})  # fmt: skip
    rendered = site.render(site.pages()["x"])
    html = rendered.intro_html + rendered.body_html
    assert "<!--" not in html and "not run" not in html and "multi" not in html and "inline" not in html
    assert "<script" not in html and "<div onclick" not in html and "<i>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;div onclick" in html
    assert '<code class="language-json">{&quot;a&quot;: &quot;&lt;b&gt;&quot;}' in html
    assert "Response 200" in html


def test_heading_ids_follow_githubs_slug_rules():
    seen: dict[str, int] = {}
    assert [slugify(t, seen) for t in ("Set up", "Set up", "Set up-1", "Set up")] == [
        "set-up", "set-up-1", "set-up-1-1", "set-up-2",
    ]  # fmt: skip
    assert slugify("`POST /api/v1/simulate`: run it") == "post-apiv1simulate-run-it"
    assert slugify("Acks, ISR & the HW (KIP-101)") == "acks-isr--the-hw-kip-101"
    assert slugify("snake_case — ünïcode") == "snake_case--ünïcode"


def test_long_pages_get_a_table_of_contents_and_tables_and_code_scroll(tmp_path):
    body = "# T\n\nIntro.\n\n" + "".join(f"## Part {i}\n\ntext\n\n### Sub {i}\n\n" for i in range(3))
    body += "| a | b |\n|---|---|\n| 1 | 2 |\n"
    site = _site(tmp_path, {"docs/t.md": body, "docs/short.md": "# S\n\n## Only\n"})
    long = site.render(site.pages()["t"])
    assert [h["id"] for h in long.toc] == ["part-0", "sub-0", "part-1", "sub-1", "part-2", "sub-2"]
    assert long.intro_html.startswith('<h1 id="t">') and "Part 0" not in long.intro_html
    assert '<div class="doc-table" tabindex="0"><table>' in long.body_html
    assert site.render(site.pages()["short"]).toc == ()


def test_the_render_cache_follows_the_file(tmp_path):
    site = _site(tmp_path, {"docs/c.md": "# One\n"})
    assert site.render(site.pages()["c"]).title == "One"
    path = tmp_path / "docs" / "c.md"
    path.write_text("# Two, longer\n", encoding="utf-8")
    assert site.render(site.pages()["c"]).title == "Two, longer"


def test_without_a_docs_readme_the_index_lists_the_pages(tmp_path):
    site = _site(tmp_path, {"docs/only.md": "# Only page\n"})
    settings = Settings(docs_dir=tmp_path / "docs")
    with TestClient(create_app(settings), raise_server_exceptions=False) as c:
        r = c.get("/docs")
        assert r.status_code == 200 and 'href="/docs/only"' in r.text and "Only page" in r.text
        assert c.get("/docs/readme").status_code == 404  # no README.md beside this docs/
    assert "" not in site.pages()


# -- the API's description ------------------------------------------------------------------------


def _refs(node, out: list[str]) -> list[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                out.append(value)
            elif key == "discriminator":
                out.extend(value.get("mapping", {}).values())
            else:
                _refs(value, out)
    elif isinstance(node, list):
        for value in node:
            _refs(value, out)
    return out


def _resolve(document: dict, ref: str):
    assert ref.startswith("#/"), f"{ref} points outside the document"
    node = document
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        assert isinstance(node, dict) and part in node, f"{ref} does not resolve"
        node = node[part]
    return node


def test_openapi_describes_the_public_api_and_every_ref_resolves(client):
    r = client.get("/openapi.json")
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.headers["cache-control"] == "public, max-age=300" and "etag" in r.headers
    assert r.headers["content-security-policy"].startswith("default-src 'self'")
    document = r.json()
    assert document["openapi"] == "3.1.0" and document["info"]["title"]
    assert set(document["paths"]) == set(PUBLIC_PATHS)
    assert not any("workshop" in p or p.startswith("/w/") for p in document["paths"])
    simulate = document["paths"]["/api/v1/simulate"]["post"]
    body_schema = simulate["requestBody"]["content"]["application/json"]["schema"]
    assert body_schema == {"$ref": "#/components/schemas/Scenario"}
    assert [p["name"] for p in simulate["parameters"]] == ["steps"]
    assert set(simulate["responses"]) == {"200", "413", "415", "422", "503"}
    refs = _refs(document, [])
    assert "#/components/schemas/Scenario" in refs
    for ref in refs:
        _resolve(document, ref)
    # the body's schema is the engine's, with its $defs moved to components
    schema = scenario_json_schema()
    defs = schema.pop("$defs")
    schema.pop("$schema")
    text = json.dumps(schema).replace("#/$defs/", "#/components/schemas/")
    assert document["components"]["schemas"]["Scenario"] == json.loads(text)
    for name in defs:
        assert name in document["components"]["schemas"]
    again = client.get("/openapi.json", headers={"If-None-Match": r.headers["etag"]})
    assert again.status_code == 304


def test_no_swagger_ui_or_redoc(client):
    assert client.get("/redoc").status_code == 404
    assert "swagger" not in client.get("/docs").text.lower()


def test_the_schema_endpoint_serves_the_engines_json_schema(client):
    r = client.get("/api/v1/scenario.schema.json")
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.json() == scenario_json_schema()
    assert r.headers["cache-control"] == "public, max-age=300"


def test_the_openapi_error_examples_are_what_the_api_answers(client):
    responses = client.get("/openapi.json").json()["paths"]["/api/v1/simulate"]["post"]["responses"]

    def example(status: str, name: str):
        return responses[status]["content"]["application/json"]["examples"][name]["value"]

    api = "/api/v1/simulate"
    declared = {"content-type": "application/json", "content-length": "300000"}
    big = client.post(api, content=b"{}", headers=declared)
    assert big.status_code == 413 and big.json() == example("413", "too_large")
    plain = client.post(api, content=b"{}", headers={"content-type": "text/plain"})
    assert plain.status_code == 415 and plain.json() == example("415", "not_json")
    bad = client.post(api, json={"version": 1, "actions": [{"do": "crash", "broker": 7}]})
    assert bad.status_code == 422 and bad.json() == example("422", "invalid_field")


# -- docs/http-api.md's examples against the app ------------------------------------------------


def _blocks(path: Path) -> list[tuple[str, str, bool]]:
    """(info, text, not_run) of each fence in a Markdown file."""
    tokens = MarkdownIt("commonmark", {"html": True}).parse(path.read_text(encoding="utf-8"))
    out = []
    for i, token in enumerate(tokens):
        if token.type == "fence":
            before = tokens[i - 1] if i else None
            not_run = bool(before and before.type == "html_block" and "not run:" in before.content)
            out.append((token.info.strip(), token.content, not_run))
    return out


def _request(text: str) -> tuple[str, str, dict[str, str], bytes]:
    head, _, body = text.partition("\n\n")
    first, *header_lines = head.splitlines()
    method, target = first.split()
    headers = dict(line.split(": ", 1) for line in header_lines)
    return method, target, headers, body.strip().encode()


def _exchanges(blocks) -> list[tuple[str, str, int, object, bool]]:
    pairs = []
    for (info, text, not_run), nxt in zip(blocks, blocks[1:] + [("", "", False)], strict=True):
        if info.split()[:1] == ["http"]:
            words = nxt[0].split()
            assert words[:2] == ["json", "response"], f"no documented answer after {text.splitlines()[0]}"
            pairs.append((text, words[2], int(words[2]), json.loads(nxt[1]), not_run))
    return pairs


HTTP_EXCHANGES = _exchanges(_blocks(HTTP_API))


def test_http_api_documents_every_public_endpoint():
    documented = {_request(text)[1].split("?")[0] for text, *_ in HTTP_EXCHANGES}
    assert documented >= set(PUBLIC_PATHS) | {"/openapi.json"}


def test_http_api_examples_that_need_other_limits_have_the_documented_shape():
    """The two answers the suite cannot get from the default app in time, from apps with a lower
    cap and a zero deadline: the same keys and codes, the cap's number aside."""
    not_run = [(t, s, d) for t, _, s, d, n in HTTP_EXCHANGES if n]
    assert len(not_run) == 1
    text, status, documented = not_run[0]
    method, target, headers, body = _request(text)
    with TestClient(create_app(Settings(max_api_events=5000)), raise_server_exceptions=False) as c:
        r = c.request(method, target, headers=headers, content=body)
    assert r.status_code == status
    expected = copy.deepcopy(documented)
    expected["problems"][0]["message"] = expected["problems"][0]["message"].replace("500000", "5000")
    assert r.json() == expected
    deadline = next(json.loads(t) for info, t, _ in _blocks(HTTP_API) if info == "json" and "deadline" in t)
    ok_request = next(t for t, _, s, _, _ in HTTP_EXCHANGES if s == 200 and "simulate" in t)
    method, target, headers, body = _request(ok_request)
    with TestClient(create_app(Settings(run_deadline_s=0.0)), raise_server_exceptions=False) as c:
        r = c.request(method, target, headers=headers, content=body)
    assert r.status_code == 503 and r.headers["retry-after"] == "1"
    assert json.loads(json.dumps(r.json()).replace(" 0 s ", " 2 s ")) == deadline


def test_a_wide_table_names_each_cells_column_so_a_phone_can_show_its_rows_as_cards(tmp_path):
    site = _site(tmp_path, {
        "README.md": "# Repo\n",
        "docs/README.md": "# Index\n",
        "docs/t.md": "# T\n\n| field | type | meaning |\n|---|---|---|\n| `a` | int | the *first* |\n"
                     "| `b` | | none |\n\n| page | for |\n|---|---|\n| x | y |\n",
    })  # fmt: skip
    html = site.render(site.pages()["t"]).intro_html
    wide, narrow = html.split('<div class="doc-table', 2)[1:]
    assert wide.startswith(' stack"') and narrow.startswith('"')
    assert '<td data-label="field"><code>a</code></td>' in wide
    assert '<td data-label="meaning">the <em>first</em></td>' in wide
    assert '<td data-label="type"></td>' in wide
    assert "data-label" not in narrow or '<td data-label="page">x</td>' in narrow
