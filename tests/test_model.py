"""The Diagnosis contract: fields, vocabulary, exact JSON round trip."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kprof.model import (
    Bottleneck,
    Confidence,
    Diagnosis,
    Direction,
    Evidence,
    Expectation,
    Finding,
    Subject,
    SubjectKind,
    Verdict,
)

from .conftest import REPO

KERNEL = "void k<float, 4>(int*)"


def make(**kw) -> Diagnosis:
    base = dict(
        subject=Subject(kind=SubjectKind.KERNEL, name=KERNEL, grid=(8, 1, 1), block=(128, 1, 1), launch=3),
        bottleneck=Bottleneck.UNCOALESCED_GLOBAL_ACCESS,
        verdict=Verdict.FIX,
        headline="Global loads use 32 sectors per request where 4 would do.",
        evidence=(
            Evidence(
                name="sectors per request", value=32.0, unit="sectors", reference="ideal 4", reference_value=4
            ),
            Evidence(name="DRAM throughput", value=41.5, unit="%", reference="of peak"),
        ),
        mechanism="Each thread reads a float 128 bytes from its neighbour.",
        fix="Make threadIdx.x index the contiguous dimension.",
        expect=(
            Expectation(metric="sectors_per_request", direction=Direction.DOWN, target=4, value_now=32.0),
        ),
        confidence=Confidence(value=0.8, would_raise="source-level counters"),
        next_step="ncu --set full -k regex:k -c 1 ./app",
        findings=(Finding(bottleneck=Bottleneck.TAIL_EFFECT, headline="1.1 waves", share=0.1),),
        file="a b/'q\".ncu-rep",
    )
    base.update(kw)
    return Diagnosis(**base)


def test_json_round_trip_is_exact():
    d = make()
    back = Diagnosis.from_dict(json.loads(json.dumps(d.to_dict())))
    assert back == d
    assert back.subject.grid == (8, 1, 1)
    assert isinstance(back.evidence, tuple) and isinstance(back.findings[0].evidence, tuple)


def test_to_dict_has_every_contract_field_in_order():
    keys = list(make().to_dict())
    assert keys == [
        "file", "subject", "bottleneck", "verdict", "headline", "evidence", "mechanism",
        "fix", "expect", "confidence", "next_step", "findings", "where", "where_note",
    ]  # fmt: skip


def test_bottleneck_none_only_when_inconclusive():
    with pytest.raises(ValueError, match="inconclusive"):
        make(bottleneck=None)
    d = make(bottleneck=None, verdict=Verdict.INCONCLUSIVE)
    assert d.to_dict()["bottleneck"] is None
    assert Diagnosis.from_dict(d.to_dict()) == d


def test_inconclusive_needs_next_step():
    with pytest.raises(ValueError, match="next_step"):
        make(verdict=Verdict.INCONCLUSIVE, next_step="")


def test_confidence_bounds_and_finite_values():
    with pytest.raises(ValueError):
        Confidence(value=1.5)
    with pytest.raises(ValueError):
        Evidence(name="x", value=float("nan"))


def test_frozen():
    d = make()
    with pytest.raises(AttributeError):
        d.headline = "x"  # type: ignore[misc]


def test_from_dict_rejects_garbage():
    with pytest.raises(ValueError, match="not a kprof diagnosis"):
        Diagnosis.from_dict({"headline": "x"})
    bad = make().to_dict()
    bad["evidence"][0]["surprise"] = 1
    with pytest.raises(ValueError, match="unknown fields"):
        Diagnosis.from_dict(bad)


def test_vocabulary_matches_design_doc():
    design = REPO.parent / "shared" / "DESIGN.md"
    if not design.exists():
        pytest.skip(f"{design} not present")
    text = design.read_text()
    section = text[text.index("## Bottleneck vocabulary") : text.index("## Command-line contract")]
    ids = set(re.findall(r"`([a-z0-9_]+)`", section))
    assert ids == {b.value for b in Bottleneck}


texts = st.text(max_size=40)
nums = st.one_of(st.none(), st.integers(-(2**53), 2**53), st.floats(allow_nan=False, allow_infinity=False))


@given(
    name=texts,
    headline=texts.filter(lambda s: s.strip() != ""),
    value=nums,
    ref=st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False)),
    conf=st.floats(0, 1),
    bott=st.sampled_from(list(Bottleneck)),
    verdict=st.sampled_from([Verdict.FIX, Verdict.HEALTHY]),
    share=st.one_of(st.none(), st.floats(0, 1)),
)
def test_round_trip_property(name, headline, value, ref, conf, bott, verdict, share):
    d = Diagnosis(
        subject=Subject(kind=SubjectKind.RANGE, name=name),
        bottleneck=bott,
        verdict=verdict,
        headline=headline,
        evidence=(Evidence(name=name, value=value, reference_value=ref),),
        expect=(Expectation(metric=name, direction="up", target=ref),),
        confidence=Confidence(value=conf),
        findings=(Finding(bottleneck=bott, headline=headline, share=share),),
    )
    assert Diagnosis.from_dict(json.loads(json.dumps(d.to_dict()))) == d
