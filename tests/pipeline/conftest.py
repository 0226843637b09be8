"""Pipeline test fixtures: one local SparkSession for the whole run (start-up costs ~4 s).

Spark is optional for the rest of the suite: without pyspark these tests skip.
py4j and pyspark can leave sockets and threads to the garbage collector; ResourceWarning is
already ignored project-wide, and pyspark's DeprecationWarnings too (pyproject.toml).
"""

import pytest


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    from pipeline.main import spark_session

    session = spark_session("local[2]", app="build-kafka-tests")
    yield session
    session.stop()
