"""Fixtures for the route tests: one app per module, a TestClient that never re-raises.

`raise_server_exceptions=False` makes the client see what a browser would see: a test that
expects "never a 500" must observe the status, not a Python exception.
"""

import warnings

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette 1.x warns that its TestClient wants httpx2
    from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings


@pytest.fixture(scope="module")
def app():
    return create_app(Settings())


@pytest.fixture(scope="module")
def client(app):
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


HTMX = {"HX-Request": "true"}
