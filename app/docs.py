"""The docs pages: docs/*.md (and the repository's README.md) rendered to HTML at /docs/...

    DocsSite(repo_root).pages() -> {name: Page}   the whitelist, read from the files in docs/
    DocsSite.render(page) -> Rendered             title, HTML, table of contents (cached per file)
    slugify(text, seen) -> str                    a heading's id, by GitHub's rules
    plain_text(inline tokens) -> str              the text a heading's id is made from

The same Markdown files read well on a code host and in the app, so the renderer follows the
code host where the two meet: CommonMark plus tables (markdown-it-py), heading ids by GitHub's
slug rules (an `other.md#some-heading` written for the code host lands on the same heading
here), and relative links between the files. It differs where the app must stay safe and whole:

- No raw HTML reaches the page. An HTML comment (`<!-- not run: ... -->` before a code block)
  is dropped; any other tag is shown as text.
- Links are rewritten: `other.md#x` -> `/docs/other#x`, `README.md` in docs/ -> `/docs`, the
  repository's `../README.md` -> `/docs/readme`. A link to anything else in the repository (a
  source file, a directory, a doc that does not exist) has no page in the app: it is drawn as the
  path in code text, never as a link that would 404. Links with a scheme and `/...` paths stay.
- Images are drawn as their alt text: the page loads nothing the app does not serve.

Page names come from the files: `docs/{name}.md` with `name` of letters, digits, `-` and `_`.
Nothing else is ever opened, so a crafted name (`..%2Fapp%2Fmain`) is simply not a page.
Rendering is cached per process, keyed by the file's mtime and size and by the set of pages (a
page's links depend on which other pages exist).
"""

from __future__ import annotations

import functools
import posixpath
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.token import Token

DOCS_PATH = "/docs"
INDEX_FILE = "README.md"  # docs/README.md is the index, /docs
README_NAME = "readme"  # the repository's own README.md, /docs/readme
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,79}")
COMMENT_RE = re.compile(r"<!--.*?-->", re.S)
TOC_MIN_HEADINGS = 4  # a page with at least this many h2/h3 headings gets a table of contents
STACK_COLUMNS = 3  # a table this wide is read as cards on a phone
TOC_LEVELS = (2, 3)


@dataclass(frozen=True, slots=True)
class Page:
    name: str  # "" for the index
    path: Path  # the Markdown file
    repo_path: str  # its path in the repository, "docs/http-api.md"
    url: str


@dataclass(frozen=True, slots=True)
class Rendered:
    title: str
    intro_html: str  # everything before the first h2 (the table of contents goes after it)
    body_html: str
    toc: tuple[dict[str, Any], ...]  # {"level", "id", "text"} of each h2/h3, when the page is long


def nest(toc: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    """The table of contents as h2 entries, each with its h3s under `children`."""
    out: list[dict[str, Any]] = []
    for h in toc:
        if h["level"] == 2 or not out:
            out.append({**h, "children": []})
        else:
            out[-1]["children"].append(h)
    return out


def page_url(name: str) -> str:
    return DOCS_PATH if name == "" else f"{DOCS_PATH}/{name}"


# -- heading ids ---------------------------------------------------------------------------------


def slugify(text: str, seen: dict[str, int] | None = None) -> str:
    """GitHub's heading id (github-slugger): lower case, every character that is not a letter,
    digit, mark, `_`, `-` or space dropped, each space a `-`; a repeat gets `-1`, `-2`, ..."""
    kept = "".join(
        ch for ch in text.lower() if ch in " -_" or unicodedata.category(ch)[0] in "LMN"
    )
    slug = kept.replace(" ", "-")
    if seen is None:
        return slug
    result = slug
    while result in seen:
        seen[slug] += 1
        result = f"{slug}-{seen[slug]}"
    seen[result] = 0
    return result


def plain_text(children: list[Token] | None) -> str:
    """The text of an inline run, as the code host reads it for a heading's id (markup dropped,
    code kept, images by their alt text, comments and tags left out). tests/docs checks anchors
    with this and `slugify`, so a link the app resolves and one the docs tests accept agree."""
    out = []
    for t in children or []:
        if t.type in ("text", "code_inline"):
            out.append(t.content)
        elif t.type == "image":
            out.append(plain_text(t.children))
        elif t.type in ("softbreak", "hardbreak"):
            out.append(" ")
    return "".join(out)


# -- the renderer -----------------------------------------------------------------------------


def _md() -> MarkdownIt:
    # html on, so comments and tags become html_block / html_inline tokens we can drop or escape
    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    rules = md.add_render_rule
    rules("html_block", _render_html_block)
    rules("html_inline", _render_html_inline)
    rules("fence", _render_fence)
    rules("code_block", _render_fence)
    rules("table_open", _render_table_open)
    rules("table_close", lambda *a: "</table></div>\n")
    rules("heading_open", _render_heading_open)
    rules("heading_close", _render_heading_close)
    rules("image", _render_image)
    rules("repo_ref_open", _render_repo_ref_open)
    rules("repo_ref_close", _render_repo_ref_close)
    return md


def _render_table_open(self, tokens, idx, options, env) -> str:
    # a wide table (STACK_COLUMNS or more) becomes one card per row on a phone (static/app.css)
    stack = " stack" if (tokens[idx].meta or {}).get("columns", 0) >= STACK_COLUMNS else ""
    return f'<div class="doc-table{stack}" tabindex="0"><table>\n'


def _label_cells(tokens: list[Token]) -> None:
    """Each body cell of a table carries its column's header as `data-label`, and the table its
    column count, so a phone can show a wide table's rows as cards that name every value."""
    table, headers, column = None, [], 0
    for i, token in enumerate(tokens):
        if token.type == "table_open":
            table, headers = token, []
        elif token.type == "th_open":
            headers.append(plain_text(tokens[i + 1].children).strip())
        elif token.type == "thead_close" and table is not None:
            table.meta = {**(table.meta or {}), "columns": len(headers)}
        elif token.type == "tr_open":
            column = 0
        elif token.type == "td_open":
            if column < len(headers) and headers[column]:
                token.attrSet("data-label", headers[column])
            column += 1


def _render_html_block(self, tokens, idx, options, env) -> str:
    rest = COMMENT_RE.sub("", tokens[idx].content).strip()
    return f"<p>{escapeHtml(rest)}</p>\n" if rest else ""


def _render_html_inline(self, tokens, idx, options, env) -> str:
    content = tokens[idx].content
    return "" if content.startswith("<!--") else escapeHtml(content)


def _render_fence(self, tokens, idx, options, env) -> str:
    token = tokens[idx]
    words = token.info.split() if token.type == "fence" else []
    lang = re.sub(r"[^A-Za-z0-9_+-]", "", words[0]) if words else ""
    label = ""
    if lang == "http":
        label = "Request"
    elif len(words) >= 3 and words[1] == "response":
        label = f"Response {words[2]}"
    cls = f' class="language-{lang}"' if lang else ""
    caption = f'<p class="doc-code-label">{escapeHtml(label)}</p>' if label else ""
    code = escapeHtml(token.content)
    return f'<div class="doc-code">{caption}<pre tabindex="0"><code{cls}>{code}</code></pre></div>\n'


def _render_heading_open(self, tokens, idx, options, env) -> str:
    token = tokens[idx]
    ident = escapeHtml(token.meta["id"])
    if token.tag == "h1":
        return f'<h1 id="{ident}">'
    return f'<div class="doc-heading"><{token.tag} id="{ident}">'


def _render_heading_close(self, tokens, idx, options, env) -> str:
    token = tokens[idx]
    if token.tag == "h1":
        return "</h1>\n"
    ident, text = escapeHtml(token.meta["id"]), escapeHtml(token.meta["text"])
    return (
        f'</{token.tag}><a class="doc-anchor" href="#{ident}"><span aria-hidden="true">#</span>'
        f'<span class="visually-hidden">Link to the section “{text}”</span></a></div>\n'
    )


def _render_image(self, tokens, idx, options, env) -> str:
    alt = plain_text(tokens[idx].children)
    return f'<span class="doc-image">[{escapeHtml(alt or "image")}]</span>' if alt else ""


def _render_repo_ref_open(self, tokens, idx, options, env) -> str:
    # link text that is the path itself, written without backticks, is shown as code all the same
    return '<span class="doc-path"><code>' if tokens[idx].meta["as_code"] else '<span class="doc-path">'


def _render_repo_ref_close(self, tokens, idx, options, env) -> str:
    meta = tokens[idx].meta
    if meta["as_code"]:
        return "</code></span>"
    if meta["shown"]:  # the link text already names the path, in code
        return "</span>"
    return f' (<code>{escapeHtml(meta["path"])}</code>)</span>'


class DocsSite:
    def __init__(self, repo_root: Path, docs_dir: Path | None = None):
        self.repo_root = repo_root
        self.docs_dir = docs_dir or repo_root / "docs"
        self.md = _md()

    # -- the whitelist ----------------------------------------------------------------------

    def pages(self) -> dict[str, Page]:
        """name -> Page for every docs/*.md with a plain name, the index and the repository's
        README. Listed on each call (a dozen directory entries), so a new file is a page at once."""
        found: dict[str, Page] = {}
        if self.docs_dir.is_dir():
            for path in sorted(self.docs_dir.glob("*.md")):
                if not path.is_file():
                    continue
                if path.name == INDEX_FILE:
                    name = ""
                elif NAME_RE.fullmatch(path.stem) and path.stem.lower() != README_NAME:
                    name = path.stem
                else:
                    continue
                found[name] = Page(name, path, f"docs/{path.name}", page_url(name))
        readme = self.repo_root / "README.md"
        if readme.is_file():
            found[README_NAME] = Page(README_NAME, readme, "README.md", page_url(README_NAME))
        return found

    def listing(self, pages: dict[str, Page] | None = None) -> list[dict[str, str]]:
        """Every page with its title, the index first, then the docs by title, the README last.
        `pages` is a `pages()` the caller already holds (one directory listing per request)."""
        pages = self.pages() if pages is None else pages
        items = [{"name": p.name, "url": p.url, "title": self.render(p, pages).title} for p in pages.values()]

        def order(item: dict[str, str]) -> tuple[int, str]:
            rank = 0 if item["name"] == "" else 2 if item["name"] == README_NAME else 1
            return rank, item["title"].lower()

        return sorted(items, key=order)

    def bare_index(self) -> tuple[Page, Rendered]:
        """The index when docs/README.md is missing: a title; the page's footer lists the pages."""
        page = Page("", self.docs_dir / INDEX_FILE, "docs/", DOCS_PATH)
        return page, Rendered("Docs", '<h1 id="docs">Docs</h1>\n', "", ())

    # -- rendering -------------------------------------------------------------------------

    def render(self, page: Page, pages: dict[str, Page] | None = None) -> Rendered:
        pages = self.pages() if pages is None else pages
        stat = page.path.stat()
        return self._render(page, stat.st_mtime_ns, stat.st_size, frozenset(pages))

    @functools.lru_cache(maxsize=64)  # noqa: B019 - one DocsSite per app, kept for its life
    def _render(self, page: Page, _mtime_ns: int, _size: int, names: frozenset[str]) -> Rendered:
        text = page.path.read_text(encoding="utf-8")
        tokens = self.md.parse(text)
        toc, title = self._headings(tokens)
        _label_cells(tokens)
        for token in tokens:
            if token.type == "inline" and token.children:
                token.children = self._links(token.children, page, names)
        h2s = (i for i, t in enumerate(tokens) if t.type == "heading_open" and t.tag == "h2")
        split = next(h2s, len(tokens))
        env: dict[str, Any] = {}
        intro = self.md.renderer.render(tokens[:split], self.md.options, env)
        body = self.md.renderer.render(tokens[split:], self.md.options, env)
        long_page = sum(1 for h in toc if h["level"] in TOC_LEVELS) >= TOC_MIN_HEADINGS
        default_title = "Docs" if page.name == "" else page.name
        return Rendered(title or default_title, intro, body, tuple(toc) if long_page else ())

    @staticmethod
    def _headings(tokens: list[Token]) -> tuple[list[dict[str, Any]], str]:
        seen: dict[str, int] = {}
        toc: list[dict[str, Any]] = []
        title = ""
        for i, token in enumerate(tokens):
            if token.type != "heading_open":
                continue
            text = plain_text(tokens[i + 1].children).strip()
            ident = slugify(text, seen)
            level = int(token.tag[1])
            token.meta = {"id": ident, "text": text}
            close = next(t for t in tokens[i + 1 :] if t.type == "heading_close")
            close.meta = {"id": ident, "text": text}
            if level == 1 and not title:
                title = text
            if level in TOC_LEVELS:
                toc.append({"level": level, "id": ident, "text": text})
        return toc, title

    def _links(self, children: list[Token], page: Page, names: frozenset[str]) -> list[Token]:
        out: list[Token] = []
        stack: list[Token] = []  # the open links, each with its rewritten close
        for i, token in enumerate(children):
            if token.type == "link_open":
                href = token.attrGet("href") or ""
                kind, target = self.resolve(str(href), page, names)
                if kind == "link":
                    token.attrSet("href", target)
                    stack.append(token)
                    out.append(token)
                    continue
                if kind == "external":
                    token.attrSet("rel", "noopener")
                    stack.append(token)
                    out.append(token)
                    continue
                # no page in the app: the text, and the path in code when the text does not name it
                inner = self._inner(children, i)
                shown = plain_text(inner).strip().strip("`").rstrip("/") in (
                    target.rstrip("/"), posixpath.basename(target.rstrip("/")), str(href).rstrip("/")
                )
                as_code = shown and not any(t.type == "code_inline" for t in inner)
                opener = Token("repo_ref_open", "span", 1)
                opener.meta = {"as_code": as_code}
                closer = Token("repo_ref_close", "span", -1)
                closer.meta = {"path": target, "shown": shown, "as_code": as_code}
                stack.append(closer)
                out.append(opener)
            elif token.type == "link_close":
                opened = stack.pop()
                out.append(opened if opened.type == "repo_ref_close" else token)
            else:
                out.append(token)
        return out

    @staticmethod
    def _inner(children: list[Token], start: int) -> list[Token]:
        depth, inner = 0, []
        for token in children[start + 1 :]:
            if token.type == "link_open":
                depth += 1
            elif token.type == "link_close":
                if depth == 0:
                    break
                depth -= 1
            inner.append(token)
        return inner

    def resolve(self, href: str, page: Page, names: frozenset[str]) -> tuple[str, str]:
        """("link", app URL) for another page or an anchor, ("external", href) for a URL with a
        scheme, or ("path", repository path) for anything without a page in the app."""
        try:
            parts = urlsplit(href)
        except ValueError:
            return "path", href
        if parts.scheme or parts.netloc:
            return "external", href
        fragment = f"#{parts.fragment}" if parts.fragment else ""
        if not parts.path:
            return "link", fragment or "#"
        if parts.path.startswith("/"):  # an address in this app
            return "link", href
        here = posixpath.dirname(page.repo_path)
        target = posixpath.normpath(posixpath.join(here, unquote(parts.path)))
        if target == ".." or target.startswith("../"):
            return "path", unquote(parts.path)
        if target in ("docs", "docs/" + INDEX_FILE) and "" in names:
            return "link", DOCS_PATH + fragment
        if target == "README.md" and README_NAME in names:
            return "link", page_url(README_NAME) + fragment
        folder, file = posixpath.split(target)
        stem = file.removesuffix(".md")
        if folder == "docs" and file.endswith(".md") and stem in names and stem not in ("", README_NAME):
            return "link", page_url(stem) + fragment
        return "path", target + ("/" if parts.path.endswith("/") else "")
