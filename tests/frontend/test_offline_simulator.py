"""The offline frontend simulator on known differences between real rendered pages."""

from __future__ import annotations

import pytest

from colbench_gym.simulators.offline_frontend import (
    OfflineFrontendSimulator,
    color_name,
    compare_pages,
    font_kind,
)
from tests.html_pages import V3

pytestmark = pytest.mark.browser

REFERENCE = f"""<html><head>{V3}</head><body class="bg-white font-sans">
<header class="bg-yellow-800 text-white px-8 py-4 flex justify-between"><span class="text-2xl font-bold">Crumb &amp; Co.</span>
<nav class="space-x-6"><a>Breads</a><a>Cakes</a><a>Visit</a></nav></header>
<section class="text-center py-24"><h1 class="text-5xl font-extrabold text-yellow-900">Baked before sunrise</h1>
<p class="mt-4 text-gray-600">Sourdough and rye from a family oven.</p></section>
<section class="px-12 py-12"><h2 class="text-3xl font-bold">Our breads</h2><div class="grid grid-cols-3 gap-6 mt-6">
<div class="p-6 shadow">Rye</div><div class="p-6 shadow">Spelt</div><div class="p-6 shadow">Seeded</div></div></section>
<footer class="bg-yellow-900 text-yellow-100 text-center py-6">Open daily 6am to 2pm</footer>
</body></html>"""


@pytest.fixture(scope="module")
def ref_dom(renderer):
    return renderer.render(REFERENCE, dom=True, cache=True).dom


def _diffs(renderer, ref_dom, html):
    return " ".join(d.sentence for d in compare_pages(ref_dom, renderer.render(html, dom=True).dom))


def test_identical_page_gets_no_complaint(renderer, ref_dom):
    assert compare_pages(ref_dom, renderer.render(REFERENCE, dom=True).dom) == []
    sim = OfflineFrontendSimulator()
    sim.reset(None, seed=0)
    reply = sim.respond(None, [{"role": "assistant", "content": "x"}], reference_dom=ref_dom, agent_dom=ref_dom)
    assert "difference" in reply or "just like" in reply


@pytest.mark.parametrize("change,expected", [
    (("bg-yellow-800 text-white px-8", "bg-blue-600 text-white px-8"), ["header", "brown background, not blue"]),
    (('<footer class="bg-yellow-900 text-yellow-100 text-center py-6">Open daily 6am to 2pm</footer>', ""), ["missing the footer"]),
    (("text-center py-24", "text-left py-24"), ["centred, not left-aligned"]),
    (("grid grid-cols-3", "grid grid-cols-1"), ["3 items side by side"]),
    (("Baked before sunrise", "Welcome to our shop"), ['should read "Baked before sunrise" instead of "Welcome to our shop"']),
    (("bg-white font-sans", "bg-white font-serif"), ["sans-serif font; yours looks serif"]),
    (("bg-white font-sans", "bg-gray-900 font-sans"), ["page background should be white, not black"]),
    (("text-5xl font-extrabold", "text-lg font-extrabold"), ["should be much bigger"]),
])
def test_known_difference_is_described(renderer, ref_dom, change, expected):
    text = _diffs(renderer, ref_dom, REFERENCE.replace(*change))
    for phrase in expected:
        assert phrase in text, text


def test_reply_is_a_few_sentences_most_salient_first(renderer, ref_dom):
    bad = f'<html><head>{V3}</head><body class="bg-gray-900 font-mono"><p class="text-left">hello</p></body></html>'
    agent = renderer.render(bad, dom=True).dom
    sim = OfflineFrontendSimulator(max_points=3)
    sim.reset(None, seed=3)
    reply = sim.respond(None, [{"role": "assistant", "content": "Here it is"}], reference_dom=ref_dom, agent_dom=agent)
    assert 2 <= reply.count(".") <= 8 and len(reply) < 1000
    diffs = compare_pages(ref_dom, agent)
    assert diffs[0].salience >= diffs[-1].salience
    assert diffs[0].sentence in reply and diffs[2].sentence in reply and diffs[3].sentence not in reply


def test_without_a_draft_the_reference_is_described_with_the_question_first(ref_dom):
    sim = OfflineFrontendSimulator(max_points=2)
    sim.reset(None, seed=1)
    reply = sim.respond(None, [{"role": "assistant", "content": "What layout and sections do you want?"}],
                        reference_dom=ref_dom, agent_dom=None)
    assert "From top to bottom" in reply and "footer" in reply
    reply2 = sim.respond(None, [{"role": "assistant", "content": "Which colours?"}], reference_dom=ref_dom, agent_dom=None)
    assert "white background" in reply2


def test_needs_reference_context():
    from colbench_gym.simulators import SimulatorError
    with pytest.raises(SimulatorError, match="reference_dom"):
        OfflineFrontendSimulator().respond(None, [{"role": "assistant", "content": "hi"}])


def test_colour_and_font_names():
    assert color_name((146, 64, 14)) == "brown"
    assert color_name((255, 255, 255)) == "white" and color_name((17, 24, 39)) == "black"
    assert color_name((30, 58, 138)) == "navy blue" and color_name((37, 99, 235)) == "blue"
    assert color_name((254, 243, 199)) == "cream" and color_name((16, 185, 129)) == "green"
    assert color_name((31, 41, 55)) == "dark grey"
    assert color_name((107, 114, 128)) == "grey" and color_name((219, 39, 119)) == "pink"
    assert font_kind("Georgia") == "serif" and font_kind("ui-sans-serif") == "sans-serif" and font_kind("Menlo") == "monospace"
