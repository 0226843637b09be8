"""The course glossary as validated data: `scenes/data/glossary.toml`.

    glossary()        -> tuple[Term, ...] in file order (validated once per process)
    term(term_id)     -> Term (KeyError for an unknown id)

Every word the diagram, its legend, the captions and the narration use has an entry. An entry's
`term` and `aliases` are the spellings that name it in prose (the app links their first
occurrence to the definition); `keywords` are extra words a learner may search with that must
not be linked (a "message" in flight is a request, not a record). `related` names other entries.
"""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path

from pydantic import Field, field_validator, model_validator

from scenes.model import _Strict

GLOSSARY_FILE = Path(__file__).resolve().parent / "data" / "glossary.toml"

# what learners may see as a source: a public citation, never a file of the course's own notes
_PRIVATE_SOURCE_MARKERS = (".md", "§", "seed ")


class Term(_Strict):
    id: str = Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$")
    term: str  # how the diagram and the narration spell it ("LEO", "high watermark")
    name: str | None = None  # the long form of an abbreviation ("log end offset")
    definition: str
    aliases: list[str] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)
    related: list[str] = Field(default_factory=list)
    sources: list[str] = Field(min_length=1)
    # phrases that start with a spelling of this term but mean something else ("committed ISR")
    avoid: list[str] = Field(default_factory=list)

    @field_validator("definition")
    @classmethod
    def _two_to_four_sentences(cls, v: str) -> str:
        text = " ".join(v.split())
        # a sentence ends with ". " / "? " / "! " or at the end; "e.g." style dots are not used
        ends = sum(text.count(p) for p in (". ", "? ", "! ")) + 1
        if not 2 <= ends <= 4 or len(text) > 700:
            raise ValueError(f"a definition is two to four sentences, under 700 characters (got {ends})")
        return text

    @field_validator("sources")
    @classmethod
    def _public_sources(cls, v: list[str]) -> list[str]:
        for source in v:
            if any(m in source for m in _PRIVATE_SOURCE_MARKERS):
                raise ValueError(f"source {source!r} is not a public citation")
        return v

    @property
    def title(self) -> str:
        """"LEO (log end offset)", or the term alone when it has no long form."""
        return f"{self.term} ({self.name})" if self.name else self.term

    @property
    def spellings(self) -> list[str]:
        """Every way prose names this term, longest first, without duplicates."""
        names = [self.term, *([self.name] if self.name else []), *self.aliases]
        return sorted(dict.fromkeys(names), key=lambda s: (-len(s), s))


class Glossary(_Strict):
    term: list[Term] = Field(min_length=1)

    @model_validator(mode="after")
    def _cross_checks(self) -> Glossary:
        ids = [t.id for t in self.term]
        if len(set(ids)) != len(ids):
            raise ValueError("duplicate glossary ids")
        owner: dict[str, str] = {}
        for t in self.term:
            for r in t.related:
                if r not in ids or r == t.id:
                    raise ValueError(f"glossary {t.id}: related {r!r} is not another entry")
            for s in t.spellings:
                key = s.lower()
                if key in owner and owner[key] != t.id:
                    raise ValueError(f"spelling {s!r} names both {owner[key]} and {t.id}")
                owner[key] = t.id
        return self


@functools.cache
def glossary() -> tuple[Term, ...]:
    with GLOSSARY_FILE.open("rb") as fh:
        data = tomllib.load(fh)
    return tuple(Glossary.model_validate(data).term)


def term(term_id: str) -> Term:
    for t in glossary():
        if t.id == term_id:
            return t
    raise KeyError(f"no glossary entry {term_id!r}")
