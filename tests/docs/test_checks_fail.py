"""The docs checks can fail: each runner and the link check, pointed at a small Markdown sample
in a temporary repository, rejects a wrong block or link with a message saying what is wrong,
and accepts the right one next to it. Without these, a runner that checked nothing would pass
every doc."""

import subprocess
import sys

import pytest

from tests.docs import markdown_blocks
from tests.docs.markdown_blocks import (
    BlockFailure,
    all_blocks,
    close_clients,
    json_subset,
    run_block,
    shell_commands,
    stray_markers,
)
from tests.docs.markdown_links import link_problems

FENCE = "```"


@pytest.fixture(scope="module", autouse=True)
def _app_clients():
    yield
    close_clients()


@pytest.fixture
def repo(tmp_path):
    """An empty git repository with a docs/ folder: the root the runners run in."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "docs").mkdir()
    (tmp_path / "kept.txt").write_text("tracked\n")
    subprocess.run(["git", "-C", str(tmp_path), "add", "kept.txt"], check=True)
    return tmp_path


def blocks_of(repo, markdown_text):
    (repo / "docs" / "sample.md").write_text(markdown_text)
    return all_blocks(repo)


def only_block(repo, markdown_text):
    blocks = blocks_of(repo, markdown_text)
    assert len(blocks) == 1
    return blocks[0]


def fence(info, body, marker=None):
    before = f"{marker}\n" if marker is not None else ""
    return f"Some prose.\n\n{before}{FENCE}{info}\n{body}\n{FENCE}\n"


def fails(repo, markdown_text, *expected):
    """The sample's one block fails with a message containing every `expected` fragment."""
    block = only_block(repo, markdown_text)
    with pytest.raises(BlockFailure) as caught:
        run_block(block, repo)
    for fragment in expected:
        assert fragment in str(caught.value)
    return str(caught.value)


def passes(repo, markdown_text):
    assert run_block(only_block(repo, markdown_text), repo) is None


# --- collecting ----------------------------------------------------------------------------------


def test_a_block_knows_its_file_line_language_tags_and_marker(repo):
    marker = "<!-- not run: a reason in words -->"
    text = "# Title\n\n" + fence("json scenario", "{}") + "\n" + fence("bash exit=2", "false", marker)
    first, second = blocks_of(repo, text)
    assert (first.id, first.language, first.tags, first.has_marker) == (
        "docs/sample.md:5-json", "json", ["scenario"], False
    )
    assert (second.id, second.tags, second.not_run) == (
        "docs/sample.md:12-bash", ["exit=2"], "a reason in words"
    )


def test_shell_lines_join_on_backslash_and_drop_comments():
    body = "# a comment\npython -m engine \\\n  run x.json   # trailing\n\necho two\n"
    assert shell_commands(body) == ["python -m engine    run x.json   # trailing", "echo two"]


# --- languages and markers -----------------------------------------------------------------------


def test_an_unknown_language_fails_saying_what_to_do(repo):
    fails(repo, fence("yaml", "a: 1"), "unknown language `yaml`", "<!-- not run: REASON -->")


def test_a_fence_without_a_language_fails(repo):
    fails(repo, fence("", "echo hi"), "no language")


def test_an_indented_code_block_fails(repo):
    fails(repo, "Prose.\n\n    echo hi\n", "indented code block")


def test_unknown_tags_fail(repo):
    fails(repo, fence("toml scenes", "a = 1"), "use none or `scene`")
    fails(repo, fence("json sceanrio", "{}"), "unknown tags")
    fails(repo, fence("bash exit=x", "true"), "exit=N")


def test_a_not_run_marker_without_a_reason_fails(repo):
    fails(repo, fence("bash", "false", "<!-- not run -->"), "needs a reason")
    fails(repo, fence("bash", "false", "<!-- not run: slow -->"), "needs a reason")


def test_a_not_run_marker_with_a_reason_skips_the_block(repo):
    block = only_block(repo, fence("bash", "false", "<!-- not run: it starts a server forever -->"))
    assert run_block(block, repo) == "it starts a server forever"


def test_a_marker_on_a_block_that_never_runs_fails(repo):
    fails(repo, fence("text", "a tree", "<!-- not run: it is only a tree -->"), "drop the marker")


def test_a_marker_away_from_a_fence_is_reported(repo):
    blocks_of(repo, "<!-- not run: it marks nothing at all -->\n\n" + fence("text", "a tree"))
    assert stray_markers(repo / "docs" / "sample.md", repo) == [
        "docs/sample.md:1: a `not run` marker must be on the line right before a fence"
    ]


# --- runners -------------------------------------------------------------------------------------


def test_a_failing_command_fails(repo):
    command = "true\npython -c 'raise SystemExit(3)'  # fails"
    fails(repo, fence("bash", command), "exited 3, the docs expect 0")


def test_exit_n_expects_that_status(repo):
    passes(repo, fence("bash exit=3", "python -c 'raise SystemExit(3)'"))
    fails(repo, fence("sh exit=2", "true"), "exited 0, the docs expect 2")


def test_commands_run_from_the_root_with_the_tests_python_first_on_path(repo):
    check = f"import sys; assert sys.executable == {sys.executable!r}, sys.executable"
    passes(repo, fence("bash", f'test -f kept.txt\ntest "$PYTHONPATH" = .\npython -c "{check}"'))


def test_a_command_that_writes_into_the_repository_fails(repo):
    fails(repo, fence("bash", "echo x > /tmp/docs-check-ok.txt\necho x > written.txt"),
          "written.txt (new)")
    fails(repo, fence("bash", "echo changed >> kept.txt"), "kept.txt (changed)", "under /tmp")


def test_a_slow_command_fails(repo, monkeypatch):
    monkeypatch.setattr(markdown_blocks, "BLOCK_TIMEOUT_S", 1)
    fails(repo, fence("bash", "sleep 5 | cat"), "did not finish within")


def test_a_failing_python_block_fails(repo):
    passes(repo, fence("python", "import engine\nprint(engine.validate({}).version)"))
    fails(repo, fence("python", "raise SystemExit('no')"), "exited 1")


def test_json_must_parse(repo):
    passes(repo, fence("json", '{"a": [1, 2]}'))
    fails(repo, fence("json", '{"a": [1, 2],}'), "not valid JSON")


def test_an_invalid_scenario_fails(repo):
    passes(repo, fence("json scenario", '{"actions": [{"do": "produce", "count": 2}]}'))
    fails(repo, fence("json scenario", '{"actions": [{"do": "fly"}]}'), "does not run", "actions[0]")
    fails(repo, fence("json scenario", '{"topic": {"replication_factor": 0}}'), "does not run")


def test_toml_must_parse(repo):
    passes(repo, fence("toml", "[[beats]]\nid = 'a'"))
    fails(repo, fence("toml", "[[beats]\nid = 'a'"), "not valid TOML")


def test_an_invalid_scene_fails(repo):
    fails(repo, fence("toml scene", 'id = "x"\ntitle = "A scene with nothing else"'), "does not validate")
    fails(repo, fence("toml scene", "id = "), "not valid TOML")


def test_a_request_gets_its_documented_answer(repo):
    text = fence("http", "GET /healthz") + fence("json response 200", '{"ok": true}')
    (repo / "docs" / "sample.md").write_text(text)
    request, answer = all_blocks(repo)
    assert request.response is answer and answer.request is request
    assert run_block(request, repo) is None and run_block(answer, repo) is None


def test_a_wrong_status_or_answer_fails(repo):
    (repo / "docs" / "sample.md").write_text(
        fence("http", "GET /healthz") + fence("json response 404", '{"ok": false, "why": "..."}')
    )
    request, _ = all_blocks(repo)
    with pytest.raises(BlockFailure) as caught:
        run_block(request, repo)
    message = str(caught.value)
    assert "the docs show 404, the app answers 200" in message
    assert "$.ok: the docs show false, the app answers true" in message
    assert "$.why: documented, missing" in message


def test_a_request_without_an_answer_must_succeed(repo):
    fails(repo, fence("http", "GET /no/such/page"), "answered 404")
    fails(repo, fence("http", "fetch /healthz"), "METHOD /path")


def test_a_post_sends_its_headers_and_body(repo):
    body = '{"actions": [{"do": "fly"}]}'
    request = fence("http", f"POST /api/v1/simulate\nContent-Type: application/json\n\n{body}")
    (repo / "docs" / "sample.md").write_text(request + fence("json response 200", "{}"))
    with pytest.raises(BlockFailure, match="the docs show 200, the app answers 4"):
        run_block(all_blocks(repo)[0], repo)


def test_an_answer_without_a_request_fails(repo):
    fails(repo, fence("json response 200", '{"ok": true}'), "put the request")


def test_json_subset_rules():
    actual = {"a": 1, "b": [1, 2, 3], "c": {"d": "x", "e": None}}
    assert json_subset({"a": 1, "c": {"d": "..."}}, actual) == []
    assert json_subset({"b": [1, "..."]}, actual) == []
    assert json_subset({"b": ["...", "...", "..."]}, actual) == []
    assert json_subset({"b": [1, 2]}, actual) == ["$.b: the docs show 2 items, the app answers 3"]
    assert json_subset({"b": [1, 2, 3, 4, "..."]}, actual) == [
        "$.b: the docs show 4 items or more, the app answers 3"
    ]
    assert json_subset({"a": 1.0}, actual) == []
    assert json_subset({"a": True}, {"a": 1}) != []
    assert json_subset({"c": {"e": "..."}}, actual) == []
    assert json_subset({"x": "..."}, actual) != []


# --- links ---------------------------------------------------------------------------------------


def test_broken_links_and_anchors_fail(repo):
    (repo / "docs" / "other.md").write_text("# Other page\n\n## Some part\n\n## Some part\n")
    page = repo / "docs" / "sample.md"
    page.write_text(
        "# Sample\n\n## Here, and now\n\n"
        "[ok](other.md#some-part-1) [ok](#here-and-now) [ok](../kept.txt#L1) [ok](../docs/) "
        "[ok](https://kafka.apache.org/documentation/) ![ok](other.md)\n\n"
        "[gone](missing.md) [anchor](other.md#no-such-part) [self](#nowhere) [line](../kept.txt#L9)\n"
        "[local](http://localhost:8000/docs) [root](/docs/other) <https://bad_host/x>\n"
        "and a bare http://127.0.0.1:8000 in prose; `http://127.0.0.1:8000` in code is fine.\n\n"
        "```text\nhttp://localhost:8000/ in a code block is fine\n```\n"
    )
    problems = link_problems(page, repo)
    assert sorted(p.split(":")[1] for p in problems) == ["7"] * 4 + ["8"] * 3 + ["9"]
    text = "\n".join(problems)
    for fragment in (
        "docs/missing.md does not exist",
        "no heading of docs/other.md has the anchor #no-such-part",
        "#nowhere",
        "kept.txt has 1 lines",
        "localhost, which is no public site",
        "starts with `/`",
        "'bad_host' is not a public host name",
        "127.0.0.1, which is no public address",
    ):
        assert fragment in text
