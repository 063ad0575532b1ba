"""Rich reprs: text and HTML from one summary, escaped, stable ids."""

from __future__ import annotations

import html as htmllib
import re

from kprof.html import render_text, reset_ids
from kprof.model import Bottleneck, Diagnosis, Subject, SubjectKind, Verdict

from ..test_model import KERNEL, make


def test_kernel_name_renders_literally_in_text_and_html():
    d = make()
    bundle = d._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}
    assert KERNEL in bundle["text/plain"]
    h = bundle["text/html"]
    assert "<float, 4>" not in h  # never raw markup
    assert htmllib.escape(KERNEL, quote=False) in h or htmllib.escape(KERNEL) in h


def test_script_in_profile_strings_is_escaped():
    evil = "<script>alert(1)</script>"
    d = make(
        subject=Subject(kind=SubjectKind.KERNEL, name=evil),
        headline=f"kernel {evil} is slow",
        file=evil,
    )
    h = d.to_html()
    assert "<script>" not in h
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in h


def test_text_and_html_say_the_same_thing():
    d = make()
    text = d.to_text()
    h = d.to_html()
    for needle in (
        d.headline,
        d.fix,
        d.mechanism,
        "sectors per request",
        d.bottleneck.value,
        d.verdict.value,
    ):
        assert needle in text
        assert htmllib.escape(needle, quote=False) in h or htmllib.escape(needle) in h
    # the text fallback inside the HTML is the text repr itself
    pre = re.search(r'<pre class="kp-text-fallback">(.*?)</pre>', h, re.S)
    assert pre is not None and htmllib.unescape(pre.group(1)) == text


def test_rich_view_is_hidden_without_css_and_fallback_shown():
    h = make().to_html()
    assert re.search(r'<div class="kp-diagnosis[^"]*" hidden>', h)
    assert ".kp-root .kp-text-fallback { display: none; }" in h


def test_element_ids_are_stable_after_reset():
    reset_ids()
    a = make().to_html()
    reset_ids()
    b = make().to_html()
    assert a == b
    assert 'id="kp-diag-1"' in a


def test_inconclusive_text_names_the_next_step():
    d = Diagnosis(
        subject=Subject(kind=SubjectKind.CAPTURE, name="x.sqlite"),
        bottleneck=None,
        verdict=Verdict.INCONCLUSIVE,
        headline="The capture holds no kernel.",
        next_step="nsys profile -t cuda ...",
    )
    t = render_text(d.summary())
    assert t.startswith("[inconclusive] undetermined: x.sqlite")
    assert "next: nsys profile -t cuda ..." in t
    assert Bottleneck.GPU_BOUND.value not in t


def test_every_text_repr_escapes_terminal_control_characters():
    """A kernel name is profile data: ESC ] 0 ; ... BEL would retitle the terminal, ESC [ 2 J clear it.
    Each text repr (diagnosis, kernel profile, comparison, overview) shows them escaped."""
    import kprof
    from kprof.html import overview
    from kprof.kernel_model import KernelLaunch, KernelProfile, Metric

    evil = "k\x1b]0;pwned\x07\x1b[2J"

    def profile(ns: float) -> KernelProfile:
        k = KernelLaunch(
            id=0,
            name=evil,
            grid=(8, 1, 1),
            block=(128, 1, 1),
            device="GPU",
            metrics={"gpu__time_duration.sum": Metric(ns, "ns")},
        )
        return KernelProfile(source=f"{evil}.ncu-rep", launches=(k,))

    before, after = profile(2000.0), profile(1000.0)
    d = make(subject=Subject(kind=SubjectKind.KERNEL, name=evil))
    texts = {
        "diagnosis": d._repr_mimebundle_()["text/plain"],
        "kernel profile": before._repr_mimebundle_()["text/plain"],
        "comparison": kprof.compare(before, after)[0]._repr_mimebundle_()["text/plain"],
        "overview": overview([d]).text,
    }
    for what, text in texts.items():
        assert not re.findall(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", text), what
        assert "\\x1b" in text, what
