"""The machinery behind tests/docs: find the fenced code blocks of README.md and docs/**/*.md,
and run each one by the block conventions of the docs.

A fence's info string is `LANGUAGE TAG...`; the line right before it may be
`<!-- not run: REASON -->`. The runners, by language and tags:

    bash, sh [exit=N]   each command (one a line, `\\` continues it) runs under bash from the
                        repository root, with the running Python's bin directory first on PATH
                        and PYTHONPATH=., and must exit 0 (or N); the block has 60 s and must
                        leave the repository as it found it
    json                parses as JSON
    json scenario       validates with the engine and simulates
    json response N     the answer of the `http` block before it (checked by that block)
    python              runs as a script in a subprocess from the repository root
    toml                parses as TOML (a part of a file)
    toml scene          validates with the scenes package's Scene model
    http                a request sent to the app in-process; the next fence, when it is
                        `json response N`, is the answer it must give (status N, JSON subset)
    text                nothing to check

Every runner raises `BlockFailure` with a message saying what is wrong and, where it helps,
what to do. The runners take the repository root as an argument, so the self-tests can point
them at a small Markdown sample in a temporary directory.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import tomllib
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt

REPO_ROOT = Path(__file__).resolve().parents[2]
BLOCK_TIMEOUT_S = 60
MIN_REASON_WORDS = 3

NOT_RUN = re.compile(r"^\s*<!--\s*not[ -]run\b\s*:?(?P<reason>.*?)-->\s*$", re.I)
NOT_RUN_ANYWHERE = re.compile(r"<!--\s*not[ -]run\b", re.I)

LANGUAGES = ("bash", "sh", "json", "python", "toml", "http", "text")
WHAT_TO_DO = (
    "Give the fence one of the languages the docs tests run: `bash`/`sh` (commands, tag `exit=N` "
    "for a non-zero status), `json` (parses), `json scenario` (a complete scenario), "
    "`json response STATUS` (after an `http` block), `python` (a script), `toml` (parses), "
    "`toml scene` (a whole scene file), `http` (a request to the app) or `text` (a diagram or "
    "tree, not checked); or, only when it truly cannot run in the test suite, put "
    "`<!-- not run: REASON -->` on the line right before it."
)


class BlockFailure(AssertionError):
    """A documented block does not do what the docs say."""


@dataclass
class Block:
    path: str  # relative to the root, with forward slashes
    line: int  # 1-based line of the opening fence
    end: int  # 1-based line of the closing fence
    language: str
    tags: list[str]
    content: str
    not_run: str | None = None  # the marker's reason ("" when the marker has none)
    has_marker: bool = False
    response: Block | None = None  # for an `http` block: the `json response N` fence after it
    request: Block | None = None  # for a `json response N` block: the `http` fence before it
    indented: bool = False  # an indented code block (no fence)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}-{self.language or 'none'}"


def markdown() -> MarkdownIt:
    return MarkdownIt("commonmark").enable(["table", "strikethrough"])


def doc_files(root: Path = REPO_ROOT) -> list[Path]:
    """README.md and every Markdown file under docs/, in a stable order."""
    files = [root / "README.md"] if (root / "README.md").is_file() else []
    files += sorted((root / "docs").rglob("*.md")) if (root / "docs").is_dir() else []
    return files


def rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def parse_blocks(path: Path, root: Path = REPO_ROOT) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    blocks: list[Block] = []
    for tok in markdown().parse(text):
        if tok.type not in ("fence", "code_block") or tok.map is None:
            continue
        start, end = tok.map
        info = tok.info.split() if tok.type == "fence" else []
        block = Block(
            path=rel(path, root),
            line=start + 1,
            end=end,
            language=info[0].lower() if info else "",
            tags=info[1:],
            content=tok.content,
            indented=tok.type == "code_block",
        )
        if start > 0:
            marker = NOT_RUN.match(lines[start - 1])
            if marker:
                block.has_marker = True
                block.not_run = marker.group("reason").strip()
        blocks.append(block)
    for before, after in zip(blocks, blocks[1:], strict=False):
        if before.language == "http" and after.language == "json" and after.tags[:1] == ["response"]:
            before.response, after.request = after, before
    return blocks


def all_blocks(root: Path = REPO_ROOT) -> list[Block]:
    return [b for path in doc_files(root) for b in parse_blocks(path, root)]


def stray_markers(path: Path, root: Path = REPO_ROOT) -> list[str]:
    """`not run` markers that are not on the line right before a fence (so they mark nothing)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    fence_lines = {b.line for b in parse_blocks(path, root) if not b.indented}
    return [
        f"{rel(path, root)}:{i + 1}: a `not run` marker must be on the line right before a fence"
        for i, line in enumerate(lines)
        if NOT_RUN_ANYWHERE.search(line) and (i + 2) not in fence_lines
    ]


# --- running one block ---------------------------------------------------------------------------


def run_block(block: Block, root: Path = REPO_ROOT) -> str | None:
    """Check one block. Returns None when it ran, or the reason it is not run (the caller skips);
    raises BlockFailure when the block is wrong."""
    if block.has_marker:
        words = len(block.not_run.split()) if block.not_run else 0
        if words < MIN_REASON_WORDS:
            raise BlockFailure(
                f"{block.id}: the `not run` marker needs a reason in plain words, at least "
                f"{MIN_REASON_WORDS} of them: `<!-- not run: REASON -->` (why this block cannot run in the "
                "test suite)"
            )
    if block.indented:
        raise BlockFailure(f"{block.id}: an indented code block has no language. {WHAT_TO_DO}")
    if not block.language:
        raise BlockFailure(f"{block.id}: the fence has no language. {WHAT_TO_DO}")
    if block.language not in LANGUAGES:
        raise BlockFailure(f"{block.id}: unknown language `{block.language}`. {WHAT_TO_DO}")
    runner = _runner(block)
    if block.has_marker and runner in (_nothing, _checked_by_request):
        raise BlockFailure(
            f"{block.id}: a `{block.language}` block is never run on its own, so a `not run` marker on it "
            "says nothing: drop the marker (mark the `http` request instead)"
        )
    if block.has_marker:
        return block.not_run
    if block.request is not None and block.request.has_marker:
        return f"the answer of {block.request.id}, which is not run"
    runner(block, root)
    return None


def _runner(block: Block):
    lang, tags = block.language, block.tags
    if lang in ("bash", "sh"):
        bad = [t for t in tags if not re.fullmatch(r"exit=\d+", t)]
        if bad or len(tags) > 1:
            raise BlockFailure(f"{block.id}: a `{lang}` fence takes at most one tag, `exit=N`; it has {tags}")
        return run_shell
    if lang == "json":
        if not tags:
            return run_json
        if tags == ["scenario"]:
            return run_scenario
        if tags[0] == "response" and len(tags) == 2 and re.fullmatch(r"[1-5]\d\d", tags[1]):
            if block.request is None:
                raise BlockFailure(
                    f"{block.id}: a `json response {tags[1]}` block answers the `http` block right before "
                    "it, and there is none: put the request (an `http` fence) before it"
                )
            return _checked_by_request
        raise BlockFailure(
            f"{block.id}: unknown tags {tags} on a `json` fence: use none, `scenario`, or `response STATUS`"
        )
    if lang == "toml":
        if tags not in ([], ["scene"]):
            raise BlockFailure(f"{block.id}: unknown tags {tags} on a `toml` fence: use none or `scene`")
        return run_toml_scene if tags else run_toml
    if tags:
        raise BlockFailure(f"{block.id}: a `{lang}` fence takes no tags; it has {tags}")
    return {"python": run_python, "http": run_http, "text": _nothing}[lang]


def _nothing(block: Block, root: Path) -> None:
    pass


def _checked_by_request(block: Block, root: Path) -> None:
    # parsing here too, so a broken answer is reported even where the request fails first
    _load_json(block, "the documented answer")


def _load_json(block: Block, what: str) -> Any:
    try:
        return json.loads(block.content)
    except json.JSONDecodeError as exc:
        line = block.line + exc.lineno  # the fence is line `block.line`; content starts after it
        raise BlockFailure(f"{block.id}: {what} is not valid JSON ({exc.msg}, {block.path}:{line})") from None


def run_json(block: Block, root: Path) -> None:
    _load_json(block, "the block")


def run_scenario(block: Block, root: Path) -> None:
    import engine
    from engine.scenario import ScenarioError

    scenario = _load_json(block, "the scenario")
    try:
        engine.validate(scenario)
        engine.simulate(scenario)
    except ScenarioError as exc:
        raise BlockFailure(
            f"{block.id}: the scenario does not run: {json.dumps(exc.to_json(), indent=1)}"
        ) from None


def _load_toml(block: Block) -> dict[str, Any]:
    try:
        return tomllib.loads(block.content)
    except tomllib.TOMLDecodeError as exc:
        raise BlockFailure(f"{block.id}: not valid TOML: {exc}") from None


def run_toml(block: Block, root: Path) -> None:
    _load_toml(block)


def run_toml_scene(block: Block, root: Path) -> None:
    from pydantic import ValidationError

    from scenes.model import Scene

    data = _load_toml(block)
    # scenes.load_scene validates a file of scenes/data with Scene.model_validate (after tagging
    # each QA with its scene id, which the model fills in when missing); a doc's example scene is
    # not on the course map, so it goes to the same model directly.
    try:
        Scene.model_validate(data)
    except ValidationError as exc:
        raise BlockFailure(f"{block.id}: the scene does not validate:\n{exc}") from None


# --- commands ------------------------------------------------------------------------------------


def shell_commands(content: str) -> list[str]:
    """The block's commands: one a line, a trailing `\\` joins the next line, blank lines and
    comment-only lines dropped (bash itself drops a trailing `# comment`)."""
    commands: list[str] = []
    pending = ""
    for line in content.splitlines():
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        command = (pending + line).strip()
        pending = ""
        if command and not command.startswith("#"):
            commands.append(command)
    if pending.strip():
        commands.append(pending.strip())
    return commands


def command_env(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    # the venv the tests run in (`.venv/bin` in a checkout), so `python` and `ruff` are its own
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = "."
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # a __pycache__ is not a change the doc made
    return env


def repo_snapshot(root: Path) -> dict[str, tuple[str, int, int]]:
    """What `git status` lists (changed, untracked and ignored entries), each with its modification
    time and size, so a command that writes a file anywhere git sees shows up as a difference.
    __pycache__ entries are left out: imports write them, documented commands do not."""
    out = subprocess.run(
        ["git", "status", "--porcelain=v1", "-z", "--ignored=matching", "--untracked-files=all"],
        cwd=root, capture_output=True, text=True, check=True,
    ).stdout
    snap: dict[str, tuple[str, int, int]] = {}
    for entry in out.split("\0"):
        if not entry or "__pycache__" in entry or ".pytest_cache" in entry:
            continue
        status, name = entry[:2], entry[3:]
        try:
            st = (root / name).stat()
            snap[name] = (status, st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            snap[name] = (status, 0, 0)
    return snap


def _changes(before: dict, after: dict) -> list[str]:
    return sorted(
        f"{name} ({'new' if name not in before else 'gone' if name not in after else 'changed'})"
        for name in set(before) | set(after)
        if before.get(name) != after.get(name)
    )


def _run_checked(block: Block, root: Path, runs: list[tuple[str, list[str], str | None]],
                 expect: int) -> None:
    deadline = time.monotonic() + BLOCK_TIMEOUT_S
    before = repo_snapshot(root)
    try:
        for shown, argv, stdin in runs:
            left = deadline - time.monotonic()
            try:
                proc = _run(argv, root, stdin, max(left, 0.1))
            except subprocess.TimeoutExpired:
                raise BlockFailure(
                    f"{block.id}: `{shown}` did not finish within the block's {BLOCK_TIMEOUT_S} s; a "
                    "documented command must be quick, or carry `<!-- not run: REASON -->` if it truly "
                    "cannot run here"
                ) from None
            if proc.returncode != expect:
                hint = " (tag the fence exit=N if that status is what the doc shows)" if expect == 0 else ""
                raise BlockFailure(
                    f"{block.id}: `{shown}` exited {proc.returncode}, the docs expect {expect}{hint}\n"
                    f"--- stdout (end) ---\n{proc.stdout[-1500:]}\n"
                    f"--- stderr (end) ---\n{proc.stderr[-1500:]}"
                )
    finally:
        changed = _changes(before, repo_snapshot(root))
    if changed:
        raise BlockFailure(
            f"{block.id}: the block changed the repository ({', '.join(changed)}); documented commands "
            "must write under /tmp, never into the checkout"
        )


def _run(argv: list[str], root: Path, stdin: str | None, timeout: float) -> subprocess.CompletedProcess:
    """Run one command in its own process group, so a timeout kills what it started as well."""
    with subprocess.Popen(
        argv, cwd=root, env=command_env(root), text=True, start_new_session=True,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    ) as proc:
        try:
            out, err = proc.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def run_shell(block: Block, root: Path) -> None:
    expect = int(block.tags[0].split("=")[1]) if block.tags else 0
    commands = shell_commands(block.content)
    if not commands:
        raise BlockFailure(f"{block.id}: the block has no command")
    shell = "sh" if block.language == "sh" else "bash"
    opts = ["-o", "pipefail"] if shell == "bash" else []
    _run_checked(block, root, [(c, [shell, *opts, "-c", c], None) for c in commands], expect)


def run_python(block: Block, root: Path) -> None:
    _run_checked(block, root, [("python <the block>", [sys.executable, "-"], block.content)], 0)


# --- http ----------------------------------------------------------------------------------------

_clients: list[Any] = []


def app_client():
    """One in-process client of the app, built as tests/web/conftest.py builds its app."""
    if not _clients:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # starlette 1.x warns that its TestClient wants httpx2
            from fastapi.testclient import TestClient
        from app.main import create_app
        from app.settings import Settings

        client = TestClient(create_app(Settings()), raise_server_exceptions=False)
        client.__enter__()
        _clients.append(client)
    return _clients[0]


def close_clients() -> None:
    while _clients:
        _clients.pop().__exit__(None, None, None)


def parse_request(block: Block) -> tuple[str, str, dict[str, str], str]:
    lines = block.content.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        raise BlockFailure(f"{block.id}: an `http` block starts with `METHOD /path`; this one is empty")
    head = lines.pop(0).split()
    if len(head) not in (2, 3) or not head[0].isupper() or not head[1].startswith("/"):
        raise BlockFailure(
            f"{block.id}: an `http` block starts with `METHOD /path?query` (the path from the site's root); "
            f"it starts with {' '.join(head)!r}"
        )
    headers: dict[str, str] = {}
    while lines and lines[0].strip():
        name, sep, value = lines.pop(0).partition(":")
        if not sep or not name.strip() or " " in name.strip():
            raise BlockFailure(
                f"{block.id}: {name!r} is not a `Name: value` header line; a blank line ends them"
            )
        headers[name.strip()] = value.strip()
    body = "\n".join(lines[1:]).strip() if lines else ""
    return head[0], head[1], headers, body


def json_subset(documented: Any, actual: Any, where: str = "$") -> list[str]:
    """Where the documented JSON differs from the actual one: every documented key must be there
    with a matching value; the string "..." matches anything; a list matches element-wise, the same
    length, unless its last element is "...", which makes it a prefix."""
    if documented == "...":
        return []
    if isinstance(documented, dict):
        if not isinstance(actual, dict):
            return [f"{where}: the docs show an object, the app answers {json.dumps(actual)[:200]}"]
        out: list[str] = []
        for key, value in documented.items():
            if key not in actual:
                out.append(f"{where}.{key}: documented, missing from the answer (it has {sorted(actual)})")
            else:
                out += json_subset(value, actual[key], f"{where}.{key}")
        return out
    if isinstance(documented, list):
        if not isinstance(actual, list):
            return [f"{where}: the docs show a list, the app answers {json.dumps(actual)[:200]}"]
        prefix = bool(documented) and documented[-1] == "..."
        items = documented[:-1] if prefix else documented
        if (len(actual) < len(items)) if prefix else (len(actual) != len(items)):
            return [f"{where}: the docs show {len(items)} items{' or more' if prefix else ''}, "
                    f"the app answers {len(actual)}"]
        out = []
        for i, item in enumerate(items):
            out += json_subset(item, actual[i], f"{where}[{i}]")
        return out
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (documented, actual))
    if (type(documented) is not type(actual) and not numbers) or documented != actual:
        return [f"{where}: the docs show {json.dumps(documented)}, "
                f"the app answers {json.dumps(actual)[:200]}"]
    return []


def run_http(block: Block, root: Path) -> None:
    method, target, headers, body = parse_request(block)
    content = body.encode() if body else None
    response = app_client().request(method, target, headers=headers, content=content)
    answer = block.response
    if answer is None:
        if response.status_code >= 400:
            raise BlockFailure(
                f"{block.id}: {method} {target} answered {response.status_code}; a request shown without its "
                f"answer must succeed, or follow it with a `json response {response.status_code}` block\n"
                f"{response.text[:1500]}"
            )
        return
    status = int(answer.tags[1])
    documented = _load_json(answer, "the documented answer")
    problems = []
    if response.status_code != status:
        problems.append(f"status: the docs show {status}, the app answers {response.status_code}")
    try:
        actual = response.json()
    except ValueError:
        problems.append(f"the app's answer is not JSON: {response.text[:300]!r}")
    else:
        problems += json_subset(documented, actual)
    if problems:
        raise BlockFailure(
            f"{block.id}: {method} {target} does not answer what {answer.id} shows:\n  "
            + "\n  ".join(problems)
        )
