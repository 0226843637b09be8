"""Command line: `python -m engine run SCENARIO.json|- [--steps] [--at-step N]`,
`python -m engine schema` (the scenario's JSON Schema) and `python -m engine schema --tables`
(the format page's field tables; `--write-docs PAGE` rewrites them in place, `--check-docs PAGE`
exits 1 when they are stale).

Prints the result JSON on stdout and exits 0; an invalid scenario prints the error object and
exits 2. Input is read with a size cap so a hostile file cannot exhaust memory.
"""

from __future__ import annotations

import argparse
import json
import sys

from . import simulate
from .scenario import ScenarioError, parse_json_text, problem
from .schema import FORMAT_PAGE, field_tables, fill_generated, scenario_json_schema, stale_blocks, tables_text

MAX_INPUT_BYTES = 1_000_000


def _read(path: str) -> str:
    if path == "-":
        data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
    else:
        try:
            with open(path, "rb") as fh:
                data = fh.read(MAX_INPUT_BYTES + 1)
        except OSError as exc:
            raise problem("$", f"cannot read {path}: {exc.strerror}") from None
    if len(data) > MAX_INPUT_BYTES:
        raise problem("$", f"the scenario file is larger than {MAX_INPUT_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise problem("$", "the scenario is not UTF-8 text") from None


def _schema(args: argparse.Namespace) -> int:
    if args.tables:
        sys.stdout.write(tables_text())
        return 0
    page = args.write_docs or args.check_docs
    if page is None:
        print(json.dumps(scenario_json_schema(), indent=args.indent or None))
        return 0
    try:
        with open(page, encoding="utf-8") as fh:
            text = fh.read()
        blocks = field_tables()  # every profile resolved: made once for the fill and the check
        new = fill_generated(text, blocks)
    except (OSError, ValueError) as exc:
        print(f"{page}: {exc}", file=sys.stderr)
        return 2
    if args.check_docs:
        stale = stale_blocks(text, blocks)
        if stale:
            print(f"{page}: generated blocks out of date: {', '.join(stale)}; run "
                  f"python -m engine schema --write-docs {page}", file=sys.stderr)
            return 1
        return 0
    if new != text:
        with open(page, "w", encoding="utf-8") as fh:
            fh.write(new)
    return 0


def main(argv: list[str] | None = None) -> int:
    epilog = (f"The scenario format (every field, action and result field, with examples) is "
              f"{FORMAT_PAGE} in the repository, also served by the app at /docs/scenario-format.")
    parser = argparse.ArgumentParser(prog="python -m engine", description="Run a Build Kafka scenario.",
                                     epilog=epilog)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="simulate a scenario and print the result JSON", epilog=epilog,
                         description="Simulate one scenario. Exit 0 with the result JSON on stdout; "
                                     "exit 2 with an error object listing each problem and where it is.")
    run.add_argument("scenario", help="path to a scenario JSON file, or - for standard input")
    run.add_argument("--steps", action="store_true", help="include every engine step in the result")
    run.add_argument("--at-step", type=int, default=None, help="also print the state after N steps as 'view'")
    run.add_argument("--indent", type=int, default=None, help="pretty-print with this indent")
    schema = sub.add_parser("schema", help="print the scenario's JSON Schema", epilog=epilog,
                            description="Print the JSON Schema (draft 2020-12) of a scenario document, "
                                        "generated from the models the engine validates with.")
    schema.add_argument("--indent", type=int, default=2, help="indent (default 2; 0 for one line)")
    what = schema.add_mutually_exclusive_group()
    what.add_argument("--tables", action="store_true",
                      help="print the format page's generated field tables (Markdown) instead")
    what.add_argument("--write-docs", metavar="PAGE",
                      help="rewrite the generated blocks of PAGE (docs/scenario-format.md) in place")
    what.add_argument("--check-docs", metavar="PAGE",
                      help="exit 1 and name the blocks of PAGE that differ from the models")
    args = parser.parse_args(argv)
    if args.command == "schema":
        return _schema(args)
    try:
        scenario = parse_json_text(_read(args.scenario))
        result = simulate(scenario, steps=args.steps, at_step=args.at_step)
    except ScenarioError as exc:
        print(json.dumps(exc.to_json(), indent=args.indent))
        return 2
    print(json.dumps(result, indent=args.indent))
    return 0


if __name__ == "__main__":
    sys.exit(main())
