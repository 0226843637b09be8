"""Settings for one app instance, with every limit the web shell enforces.

`create_app(settings)` takes one of these; tests build their own with smaller caps. Every cap is
a plain number with its unit in the name, so a reader can see at a glance what a request may
cost.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True, slots=True)
class Settings:
    templates_dir: Path = REPO_ROOT / "templates"
    static_dir: Path = REPO_ROOT / "static"
    # Request-size limits: state is the URL, so the URL is the attack surface.
    max_query_chars: int = 4096
    max_body_bytes: int = 256 * 1024
    max_injected_actions: int = 50
    max_step: int = 100_000  # any step above this is a malformed URL, not "past the end"
    max_ask_chars: int = 200
    max_log_lines: int = 400  # event-log lines rendered at once (the newest ones)
    gzip_min_bytes: int = 1024  # responses smaller than this go out uncompressed
    # Engine result caches (state is the URL, so a result is a pure function of its key).
    simulate_cache_entries: int = 512
    # Shown in the page footer and in error pages.
    site_name: str = "Build Kafka"
    extra_headers: dict[str, str] = field(default_factory=dict)
    # Addresses (or CIDR networks) of the reverse proxies whose X-Forwarded-Proto and
    # X-Forwarded-Host are believed, so share and embed URLs say https:// behind a TLS-terminating
    # proxy. Empty: no proxy is trusted and the headers are ignored.
    trusted_proxies: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Settings:
        """Settings from the environment: BUILD_KAFKA_TRUSTED_PROXIES is a comma-separated list
        of proxy addresses or networks (e.g. "127.0.0.1,10.0.0.0/8")."""
        env = os.environ if environ is None else environ
        proxies = tuple(p.strip() for p in env.get("BUILD_KAFKA_TRUSTED_PROXIES", "").split(",") if p.strip())
        return cls(trusted_proxies=proxies)
