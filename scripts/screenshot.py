"""Take screenshots of pages of the app in Chromium, to look at a scene the way a learner sees it.

    python scripts/screenshot.py /scenes/05 --out /tmp/shots
    python scripts/screenshot.py "/scenes/x1?beat=first-record" --out /tmp/shots --stops
    python scripts/screenshot.py /scenes/05 --out /tmp/shots --base-url http://127.0.0.1:8000

For each path and each width (1280 and 360 px unless --width is given) it saves the whole page.
With --stops it then presses the Step key (→), as a learner does, until the beat has no stop
left, and saves the viewer (diagram, Step bar, caption) at every stop. It fails, naming the stop,
when a press of the key does not move the page on or leaves the diagram exactly as it was,
and when the page logs an error to the console. It prints every file it wrote.

Without --base-url it serves the app itself (uvicorn, on 127.0.0.1 and a free port) for as long
as it runs, with the environment it was given: BUILD_KAFKA_SCENES_DIR shows a draft scene
(docs/adding-a-scene.md). It needs Playwright (the dev extra) and Debian's Chromium
(/usr/bin/chromium, or --chromium PATH).
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
# Chromium's background services try to reach Google; keep them quiet (as tests/conftest.py does)
CHROMIUM_ARGS = ["--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
WIDTHS = (1280, 360)
HEIGHT = 900
MAX_STOPS = 100
TIMEOUT_MS = 15_000
SERVER_START_S = 30
READY_JS = "window.htmx !== undefined && document.documentElement.classList.contains('js')"


class ShotError(Exception):
    """What went wrong on a page, said for the person who ran the script."""


def file_stem(path: str) -> str:
    """`/scenes/x1?beat=first-record` -> `scenes-x1-beat-first-record`."""
    return re.sub(r"[^A-Za-z0-9]+", "-", path).strip("-") or "home"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(log_dir: Path) -> tuple[subprocess.Popen, str]:
    """uvicorn serving app.main:app from this checkout; returns the process and its base URL."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "BUILD_KAFKA_DATA_DIR": str(log_dir / "data")}  # no workshop file in var/
    env.pop("DATABASE_URL", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    log_path = log_dir / "uvicorn.log"

    def log() -> str:
        return log_path.read_text(errors="replace")

    with log_path.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "app.main:app", "--host", "127.0.0.1", "--port", str(port),
             "--log-level", "warning"],
            cwd=REPO_ROOT, stdout=sink, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ShotError(f"the app exited with {process.returncode}:\n{log()}")
        try:
            with urllib.request.urlopen(base + "/healthz", timeout=1):
                return process, base
        except urllib.error.HTTPError:
            return process, base
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.1)
    stop_server(process)
    raise ShotError(f"the app did not answer within {SERVER_START_S} s:\n{log()}")


def stop_server(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def wait_settled(page) -> None:
    page.wait_for_function("!document.querySelector('.htmx-request')", timeout=TIMEOUT_MS)


def walk_stops(page, out: Path, stem: str, written: list[Path]) -> None:
    """Press → at every stop of the beat and save the viewer each time."""
    viewer, diagram = page.locator(".viewer").first, page.locator("#diagram")
    shot = out / f"{stem}-stop00.png"
    viewer.screenshot(path=str(shot))
    written.append(shot)
    before = diagram.inner_html()
    for n in range(1, MAX_STOPS + 1):
        forward = page.locator("#step-forward")
        # at the beat's last stop the Step link turns into Next beat / Challenge / Next scene
        if forward.count() == 0 or forward.get_attribute("data-next") is not None \
                or forward.get_attribute("aria-disabled") == "true":
            return
        url = page.url
        page.locator("body").press("ArrowRight")
        try:
            page.wait_for_function("u => location.href !== u", arg=url, timeout=TIMEOUT_MS)
        except Exception as exc:  # playwright's TimeoutError
            raise ShotError(f"{stem}: the Step key did not move the page on from stop {n - 1} ({url})") \
                from exc
        wait_settled(page)
        shot = out / f"{stem}-stop{n:02d}.png"
        viewer.screenshot(path=str(shot))
        written.append(shot)
        now = diagram.inner_html()
        if now == before:
            raise ShotError(f"{stem}: at stop {n} ({page.url}) the diagram is exactly as it was at stop "
                            f"{n - 1}")
        before = now
    raise ShotError(f"{stem}: more than {MAX_STOPS} stops")


def take(base: str, paths: list[str], out: Path, widths: list[int], stops: bool, chromium: str) -> list[Path]:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            for width in widths:
                page = browser.new_page(viewport={"width": width, "height": HEIGHT})
                page.on("console",
                        lambda m, pg=page: m.type == "error" and errors.append(f"{pg.url}: {m.text}"))
                page.on("pageerror", lambda e, pg=page: errors.append(f"{pg.url}: {e}"))
                for path in paths:
                    response = page.goto(base + path)
                    if response is None or response.status != 200:
                        raise ShotError(f"{path} answered {response.status if response else 'nothing'}")
                    page.wait_for_function(READY_JS, timeout=TIMEOUT_MS)
                    stem = f"{file_stem(path)}-{width}"
                    shot = out / f"{stem}.png"
                    page.screenshot(path=str(shot), full_page=True)
                    written.append(shot)
                    if stops:
                        walk_stops(page, out, stem, written)
                page.close()
        finally:
            browser.close()
    if errors:
        raise ShotError("the page logged errors:\n" + "\n".join(errors[:20]))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="a page of the app, e.g. /scenes/05?beat=rf1-cap")
    parser.add_argument("--out", required=True, type=Path, help="the directory the PNG files go to")
    parser.add_argument("--width", type=int, action="append", help="a viewport width in px (repeatable)")
    parser.add_argument("--stops", action="store_true", help="step through the beat with the Step key")
    parser.add_argument("--base-url", help="a running app (default: serve this checkout for the run)")
    parser.add_argument("--chromium", default=CHROMIUM, help=f"the Chromium binary (default {CHROMIUM})")
    args = parser.parse_args(argv)
    bad = [p for p in args.paths if not p.startswith("/")]
    if bad:
        parser.error(f"a PATH starts with / (got {bad[0]!r})")
    if not Path(args.chromium).exists():
        print(f"screenshot: no Chromium at {args.chromium} (apt-get install chromium)", file=sys.stderr)
        return 2
    widths = args.width or list(WIDTHS)
    try:
        if args.base_url:
            written = take(args.base_url.rstrip("/"), args.paths, args.out, widths, args.stops, args.chromium)
        else:
            with tempfile.TemporaryDirectory(prefix="screenshot-") as tmp:
                process, base = start_server(Path(tmp))
                try:
                    written = take(base, args.paths, args.out, widths, args.stops, args.chromium)
                finally:
                    stop_server(process)
    except ShotError as exc:
        print(f"screenshot: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
