"""Links in README.md and docs/**/*.md: relative ones resolve to a file or directory of the
repository, `#anchors` match a heading by GitHub's slug rules (app/docs.py's `slugify`: the ids
the app gives its docs pages too), absolute ones are well-formed http(s) URLs of public sites (a
localhost URL belongs in a code block). No network is used.

Links are read from the parsed Markdown (inline and reference links, images, autolinks), from
HTML `href`/`src` attributes, and from bare URLs in text, which GitHub turns into links.
"""

from __future__ import annotations

import ipaddress
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from app.docs import plain_text, slugify
from tests.docs.markdown_blocks import REPO_ROOT, markdown, rel

BARE_URL = re.compile(r"https?://[^\s<>()\[\]`\"']+", re.I)
HTML_ATTR = re.compile(r"""\b(href|src)\s*=\s*["']([^"']*)["']""", re.I)
HTML_ID = re.compile(r"""\b(?:id|name)\s*=\s*["']([^"']*)["']""", re.I)
LINE_ANCHOR = re.compile(r"L(\d+)(?:-L(\d+))?")
HOST_LABEL = re.compile(r"(?!-)[a-z0-9-]{1,63}(?<!-)", re.I)


@dataclass
class Link:
    path: str  # the Markdown file, relative to the root
    line: int
    target: str
    kind: str  # "link", "image", "html" or "bare"

    def where(self) -> str:
        return f"{self.path}:{self.line}: {self.target!r}"


def anchors(path: Path) -> set[str]:
    """Every anchor a Markdown file offers: heading slugs, with `-1`, `-2`... on repeats, and HTML
    `id`/`name` attributes."""
    tokens = markdown().parse(path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    out: set[str] = set()
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open":  # the app's own heading ids (app/docs.py), GitHub's rules
            out.add(slugify(plain_text(tokens[i + 1].children).strip(), seen))
        elif tok.type in ("html_block", "html_inline") or tok.children:
            for html in [tok.content] + [c.content for c in tok.children or [] if c.type == "html_inline"]:
                out.update(HTML_ID.findall(html))
    return out


def links(path: Path, root: Path = REPO_ROOT) -> list[Link]:
    name = rel(path, root)
    found: list[Link] = []
    for tok in markdown().parse(path.read_text(encoding="utf-8")):
        line = tok.map[0] + 1 if tok.map else 0
        if tok.type == "html_block":
            found += [Link(name, line, target, "html") for _, target in HTML_ATTR.findall(tok.content)]
        in_link = 0
        for child in tok.children or []:
            if child.type in ("softbreak", "hardbreak"):
                line += 1
            elif child.type == "link_open":
                found.append(Link(name, line, child.attrs.get("href", ""), "link"))
                in_link += 1
            elif child.type == "link_close":
                in_link -= 1
            elif child.type == "image":
                found.append(Link(name, line, child.attrs.get("src", ""), "image"))
            elif child.type == "html_inline":
                found += [Link(name, line, target, "html") for _, target in HTML_ATTR.findall(child.content)]
            elif child.type == "text" and not in_link:
                urls = BARE_URL.findall(child.content)
                found += [Link(name, line, url.rstrip(".,;:!?"), "bare") for url in urls]
    return found


def _ignored(paths: list[Path], root: Path) -> set[Path]:
    if not paths:
        return set()
    proc = subprocess.run(
        ["git", "check-ignore", "--stdin"], cwd=root, capture_output=True, text=True,
        input="\n".join(str(p) for p in paths),
    )
    return {Path(line) for line in proc.stdout.splitlines()}


def _public_url_problem(url: str) -> str | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return f"a malformed URL ({exc})"
    del port
    host = (parts.hostname or "").rstrip(".")
    if not host:
        return "a URL with no host"
    if any(c.isspace() for c in url):
        return "a URL with white space in it"
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        if host == "localhost" or host.endswith((".localhost", ".local", ".internal", ".test", ".example")):
            return f"a link to {host}, which is no public site; put a local URL in a code block"
        if "." not in host or not all(HOST_LABEL.fullmatch(label) for label in host.split(".")):
            return f"{host!r} is not a public host name"
        return None
    if not ip.is_global:
        return f"a link to {host}, which is no public address; put a local URL in a code block"
    return None


def link_problems(path: Path, root: Path = REPO_ROOT) -> list[str]:
    """What is wrong with the links of one Markdown file, one line per broken link."""
    problems: list[str] = []
    local: list[tuple[Link, Path, str]] = []
    for link in links(path, root):
        target = link.target.strip()
        scheme = urlsplit(target).scheme.lower() if ":" in target else ""
        if not target:
            problems.append(f"{link.where()} is an empty link")
        elif scheme in ("http", "https"):
            problem = _public_url_problem(target)
            if problem:
                problems.append(f"{link.where()} is {problem}")
        elif scheme == "mailto":
            continue
        elif scheme:
            problems.append(f"{link.where()}: only relative links and http(s) URLs are allowed")
        elif target.startswith("/"):
            problems.append(
                f"{link.where()} starts with `/`; link with a path relative to this file (the app maps "
                "links between docs pages to /docs/<name> itself)"
            )
        else:
            raw_path, _, anchor = target.partition("#")
            raw_path = raw_path.partition("?")[0]
            dest = (path.parent / unquote(raw_path)).resolve() if raw_path else path.resolve()
            local.append((link, dest, unquote(anchor)))
    ignored = _ignored([dest for _, dest, _ in local if dest.exists()], root)
    for link, dest, anchor in local:
        if not dest.is_relative_to(root.resolve()):
            problems.append(f"{link.where()} points outside the repository")
        elif not dest.exists():
            problems.append(f"{link.where()}: {rel(dest, root.resolve())} does not exist")
        elif dest in ignored:
            problems.append(f"{link.where()}: {rel(dest, root.resolve())} is ignored by git, so not in the "
                            "repository")
        elif anchor:
            problems += _anchor_problem(link, dest, anchor, root)
    return problems


def _anchor_problem(link: Link, dest: Path, anchor: str, root: Path) -> list[str]:
    if dest.is_dir():
        return [f"{link.where()}: an anchor on a directory"]
    if dest.suffix.lower() == ".md":
        offered = anchors(dest)
        if anchor in offered:
            return []
        near = sorted(a for a in offered if anchor.split("-")[0] in a)[:5]
        return [
            f"{link.where()}: no heading of {rel(dest, root.resolve())} has the anchor #{anchor}"
            + (f" (close: {', '.join('#' + a for a in near)})" if near else "")
        ]
    lines = LINE_ANCHOR.fullmatch(anchor)
    if lines is None:
        return [f"{link.where()}: in a file that is not Markdown only a line anchor (#L12 or #L12-L20) works"]
    count = len(dest.read_text(encoding="utf-8", errors="replace").splitlines())
    last = int(lines.group(2) or lines.group(1))
    if last > count:
        return [f"{link.where()}: {rel(dest, root.resolve())} has {count} lines"]
    return []
