"""scenes/data/glossary.toml: every term the course draws or narrates has a validated entry."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from scenes.glossary import Glossary, glossary, term

# the terms issue 8 names, by the id of the entry that must define them
REQUIRED = [
    "leo", "hw", "isr", "elr", "leader-epoch", "partition-epoch", "purgatory", "fenced", "controller",
    "kraft", "alter-partition", "fetch", "replica-lag-time-max-ms", "min-insync-replicas",
    "effective-min-isr", "acks", "unclean-leader-election", "truncation", "diverging-epoch",
    "leader-epoch-cache", "page-cache", "flush", "committed", "acknowledged", "preferred-leader",
    "controlled-shutdown", "session-timeout", "offset", "record", "partition", "replica", "follower",
    "leader", "not-enough-replicas", "idempotent-producer", "delivery-timeout-ms", "rack",
]


def test_every_required_term_has_an_entry():
    ids = {t.id for t in glossary()}
    assert not set(REQUIRED) - ids
    assert len(glossary()) >= len(REQUIRED)


@pytest.mark.parametrize(("spelling", "term_id"), [
    ("log end offset", "leo"), ("high watermark", "hw"), ("in-sync replicas", "isr"),
    ("eligible leader replicas", "elr"), ("long poll", "fetch"), ("heartbeat", "session-timeout"),
    ("broker.session.timeout.ms", "session-timeout"), ("fsync", "flush"), ("acked", "acknowledged"),
])
def test_long_forms_and_aliases_name_their_entry(spelling, term_id):
    assert spelling in term(term_id).spellings


def test_entries_are_complete_and_public():
    for t in glossary():
        assert t.definition and t.sources and t.related, t.id
        assert all(".md" not in s and "§" not in s for s in t.sources), t.id
        assert t.spellings[0] == max(t.spellings, key=len)


def test_the_model_refuses_bad_entries():
    good = {"id": "x", "term": "X", "definition": "One. Two.", "sources": ["KIP-1"]}
    Glossary.model_validate({"term": [good]})
    for bad in (
        {**good, "sources": ["kafka-semantics.md §3"]},
        {**good, "sources": []},
        {**good, "definition": "One. Two. Three. Four. Five."},
        {**good, "definition": "Only one."},
        {**good, "related": ["nope"]},
        {**good, "id": "Not An Id"},
        {**good, "colour": "red"},
    ):
        with pytest.raises(ValidationError):
            Glossary.model_validate({"term": [bad]})
    with pytest.raises(ValidationError):  # one spelling may not name two entries
        Glossary.model_validate({"term": [good, {**good, "id": "y", "aliases": ["x"]}]})
    with pytest.raises(KeyError):
        term("no-such-term")
