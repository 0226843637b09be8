"""A few hundred fuzzed requests in process (bench/fuzz.py's generator): never a 5xx other than
the 503 of a run past its deadline, and every 4xx says why (issue 9, hostile input)."""

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("bench_fuzz", Path(__file__).parents[2] / "bench" / "fuzz.py")
fuzz = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz)

REQUESTS = fuzz.requests(seed=4, n=300)


@pytest.mark.parametrize("chunk", range(6))
def test_fuzzed_requests_get_a_reason_and_never_a_server_error(client, chunk):
    for method, path, headers, body in REQUESTS[chunk * 50 : (chunk + 1) * 50]:
        r = client.request(method, path, headers=headers, content=body or None, follow_redirects=False)
        where = f"{method} {path[:200]} {headers}"
        assert r.status_code < 500 or (r.status_code == 503 and "retry-after" in r.headers), where
        if 400 <= r.status_code < 500 and method != "HEAD":
            assert len(r.text.strip()) > 20 and "Traceback" not in r.text, where
