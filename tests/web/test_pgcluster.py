"""The ``postgres_url`` fixture gives a real PostgreSQL server: tables persist across connections,
and LISTEN/NOTIFY carries a message from one connection to another."""

import time

import psycopg

NOTIFY_TIMEOUT_S = 5


def test_a_table_written_on_one_connection_is_read_on_another(postgres_url):
    with psycopg.connect(postgres_url, autocommit=True) as writer:
        writer.execute("CREATE TABLE pgcluster_check (id int PRIMARY KEY, note text NOT NULL)")
        writer.execute("INSERT INTO pgcluster_check VALUES (1, 'héllo')")
    try:
        with psycopg.connect(postgres_url) as reader:
            assert reader.execute("SELECT note FROM pgcluster_check").fetchall() == [("héllo",)]
            assert reader.info.encoding == "utf-8"
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as cleaner:
            cleaner.execute("DROP TABLE pgcluster_check")


def test_a_notify_reaches_a_listener_on_another_connection(postgres_url):
    with (
        psycopg.connect(postgres_url, autocommit=True) as listener,
        psycopg.connect(postgres_url, autocommit=True) as sender,
    ):
        listener.execute("LISTEN pgcluster_check")
        sent_at = time.monotonic()
        sender.execute("SELECT pg_notify('pgcluster_check', 'beat 7')")
        received = list(listener.notifies(timeout=NOTIFY_TIMEOUT_S, stop_after=1))
        sender_pid = sender.info.backend_pid
    assert [(n.channel, n.payload) for n in received] == [("pgcluster_check", "beat 7")]
    assert received[0].pid == sender_pid
    assert time.monotonic() - sent_at < NOTIFY_TIMEOUT_S
