"""A frontend human simulator that needs no model: it compares the two rendered pages.

The paper's simulator is a vision-language model looking at two screenshots and telling the
agent what differs most. Without a model we compare what the browser computed for both pages
(see ``colbench_gym/rendering/dom_js.py``): page and section background colours, text colours,
fonts, font sizes, alignment, layout boxes (height, number of columns), the sequence of
sections, images and the visible text. Each difference gets a salience (how much of the page
it affects x how different it is); the few most salient are phrased as a person would say them
("The header bar should be dark brown with white text, not white."), in a few sentences.

With no page from the agent yet, the simulator describes the page it has in mind instead,
leading with what the agent's message asks about (colours, fonts, layout, text, images).
"""

from __future__ import annotations

import colorsys
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from colbench_gym.simulators.base import Dialogue, HumanSimulator, SimulatorError

_RGB = re.compile(r"rgba?\(\s*([\d.]+)[,\s]+([\d.]+)[,\s]+([\d.]+)(?:\s*[,/]\s*([\d.]+%?))?\s*\)")
_HEADINGS = ("h1", "h2", "h3")
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "next")
_SEMANTIC = {"header": "header", "nav": "navigation bar", "footer": "footer", "aside": "sidebar", "form": "form"}


# --------------------------------------------------------------------------- colours and fonts
def parse_color(value: str | None) -> tuple[tuple[int, int, int], float] | None:
    """``((r, g, b), alpha)`` of a computed CSS colour, or None when unparseable."""
    if not value:
        return None
    m = _RGB.search(value)
    if not m:
        return None
    alpha = m.group(4)
    a = 1.0 if alpha is None else (float(alpha[:-1]) / 100 if alpha.endswith("%") else float(alpha))
    return (int(float(m.group(1))), int(float(m.group(2))), int(float(m.group(3)))), a


def color_distance(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    """Perceptually weighted RGB distance (0..~765); > 60 is a difference people notice."""
    rm = (a[0] + b[0]) / 2
    dr, dg, db = a[0] - b[0], a[1] - b[1], a[2] - b[2]
    return float(np.sqrt((2 + rm / 256) * dr * dr + 4 * dg * dg + (2 + (255 - rm) / 256) * db * db))


def color_name(rgb: tuple[int, int, int]) -> str:
    """A plain-English name for a colour ("dark brown", "pale yellow", "navy blue")."""
    r, g, b = (c / 255 for c in rgb)
    h, light, sat = colorsys.rgb_to_hls(r, g, b)
    hue = h * 360
    if light > 0.96 and sat < 0.5 or light > 0.985:
        return "white"
    if light < 0.1 or (light < 0.14 and sat < 0.45):
        return "black"
    if light < 0.2 and sat < 0.45:
        return "dark grey"  # Tailwind's gray/slate-800: blue-tinted, but people say grey
    if sat < 0.12 or (sat < 0.2 and 0.2 < light < 0.85):
        if light > 0.85:
            return "light grey"
        return "dark grey" if light < 0.35 else "grey"
    if 15 <= hue < 50 and light < 0.45:
        base = "brown"
    elif 30 <= hue < 60 and light > 0.85:
        base = "cream"
    elif hue < 12 or hue >= 345:
        base = "red"
    elif hue < 40:
        base = "orange"
    elif hue < 65:
        base = "yellow"
    elif hue < 167:
        base = "green"
    elif hue < 190:
        base = "teal"
    elif hue < 205:
        base = "sky blue"
    elif hue < 245:
        base = "blue"
    elif hue < 265:
        base = "indigo"
    elif hue < 290:
        base = "purple"
    else:
        base = "pink"
    if base in ("blue", "indigo") and light < 0.36:
        return "navy blue"
    if base in ("cream",):
        return base
    if light > 0.82:
        return f"pale {base}"
    if light > 0.68:
        return f"light {base}"
    if light < 0.3:
        return f"dark {base}"
    return base


def font_kind(family: str) -> str:
    f = (family or "").lower()
    if any(k in f for k in ("mono", "courier", "consolas", "menlo")):
        return "monospace"
    if any(k in f for k in ("serif", "georgia", "times", "garamond", "playfair", "merriweather", "cambria")) and "sans" not in f:
        return "serif"
    if "cursive" in f or "comic" in f or "pacifico" in f:
        return "handwritten"
    return "sans-serif"


# --------------------------------------------------------------------------- page model
@dataclass
class Block:
    """A visible element with the properties a viewer perceives."""

    i: int
    tag: str
    text: str
    box: tuple[int, int, int, int]
    color: tuple[int, int, int]
    bg: tuple[int, int, int]  # effective background (own or inherited)
    own_bg: bool
    font: str
    size: float
    weight: int
    align: str
    cols: int
    row: bool
    children: list[int] = field(default_factory=list)


@dataclass
class Section:
    name: str
    block: Block
    texts: list[str]
    headings: list[tuple[str, float]]
    images: int
    columns: int
    align: str
    heading_color: tuple[int, int, int] | None
    heading_size: float


class Page:
    """A rendered page as blocks and top-level sections (from the renderer's DOM summary)."""

    def __init__(self, dom: dict[str, Any]):
        self.dom = dom
        body = dom.get("body") or {}
        bg = parse_color(body.get("bg"))
        if bg is None or bg[1] < 0.05:
            bg = parse_color(body.get("htmlbg"))
        self.bg = bg[0] if bg and bg[1] >= 0.05 else (255, 255, 255)
        col = parse_color(body.get("color"))
        self.color = col[0] if col else (0, 0, 0)
        self.font = body.get("font", "")
        self.height = int(dom.get("height") or 0)
        self.width = int(dom.get("width") or 1280)
        self.blocks: list[Block] = []
        for i, n in enumerate(dom.get("nodes", [])):
            parent = n.get("parent", -1)
            pbg = self.blocks[parent].bg if 0 <= parent < len(self.blocks) else self.bg
            own = parse_color(n.get("bg"))
            has_bg = own is not None and own[1] >= 0.5
            c = parse_color(n.get("color"))
            blk = Block(i, n.get("tag", "div"), n.get("text", ""), (n["x"], n["y"], n["w"], n["h"]),
                        c[0] if c else self.color, own[0] if has_bg else pbg, has_bg, n.get("font", ""),
                        float(n.get("size") or 16), int(n.get("weight") or 400), n.get("align", "start"),
                        int(n.get("cols") or 0), "flex" in n.get("display", "") and n.get("dir", "row").startswith("row"))
            self.blocks.append(blk)
            if 0 <= parent < len(self.blocks) - 1:
                self.blocks[parent].children.append(i)
        self.sections = self._sections()

    def descendants(self, i: int) -> list[Block]:
        out, stack = [], list(self.blocks[i].children)
        while stack:
            j = stack.pop()
            out.append(self.blocks[j])
            stack.extend(self.blocks[j].children)
        return sorted(out, key=lambda b: b.i)

    def _roots(self) -> list[Block]:
        roots = [b for b in self.blocks if b.i == 0 or self.dom["nodes"][b.i].get("parent", -1) == -1]
        # Descend through wrappers: a single root covering the page is a container, not a section.
        while len(roots) == 1 and len(roots[0].children) > 1:
            roots = [self.blocks[j] for j in roots[0].children]
        return [r for r in roots if r.box[2] * r.box[3] >= 400]

    def _sections(self) -> list[Section]:
        roots = self._roots()
        out = []
        for k, r in enumerate(roots):
            desc = [r] + self.descendants(r.i)
            texts = [b.text for b in desc if b.text]
            cand = [b for b in desc if b.text and re.search(r"[A-Za-z]{2}", b.text) and (b.tag in _HEADINGS or b.size >= 24)]
            cand.sort(key=lambda b: (b.tag not in _HEADINGS, -b.size, b.i))  # real headings first, then big text
            heads = [(b.text, b.size) for b in cand]
            head_blk = max((b for b in desc if b.text), key=lambda b: (b.size, b.weight), default=None)
            cols = max([len(b.children) if b.row and len(b.children) >= 2 and b.box[2] > 0.5 * r.box[2] else 0
                        for b in desc] + [b.cols for b in desc] + [0])
            aligns = [b.align for b in desc if b.text]
            align = max(set(aligns), key=aligns.count) if aligns else "start"
            name = _SEMANTIC.get(r.tag) or self._describe_position(k, len(roots), r)
            if name == "section" and not heads:
                tags = {b.tag for b in desc}
                if tags & {"input", "textarea", "form"}:
                    name = "form"
                elif texts and sum(bool(re.match(r"^[\d$€£.,:%/+kK]+$", t)) for t in texts) * 2 >= len(texts) - 1:
                    name = "row of figures"
                elif sum(b.tag == "img" for b in desc) >= 2:
                    name = "picture gallery"
                elif any(b.tag == "blockquote" for b in desc):
                    name = "quote"
                else:
                    name = f"{_ORDINALS[min(k, len(_ORDINALS) - 1)]} section from the top"
            out.append(Section(name, r, texts, heads, sum(b.tag == "img" for b in desc), cols,
                               "center" if align == "center" else ("right" if align in ("right", "end") else "left"),
                               head_blk.color if head_blk else None, head_blk.size if head_blk else 16.0))
        return out

    @staticmethod
    def _describe_position(k: int, n: int, r: Block) -> str:
        if k == 0 and r.box[3] < 140:
            return "top bar"
        if k == n - 1 and n > 2 and r.box[3] < 220:
            return "bottom strip"
        return "section"

    def all_text(self) -> str:
        return " ".join(b.text for b in self.blocks if b.text).lower()


_ROLES = {"top", "footer", "sidebar", "form"}


def _family(name: str) -> str:
    """Section names that a person would treat as the same part of a page."""
    if name in ("header", "navigation bar", "top bar"):
        return "top"
    if name in ("footer", "bottom strip"):
        return "footer"
    return name


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9']+", text.lower()))


def _label(section: Section, yours: bool = False) -> str:
    """How a person refers to a section: by its role and its most visible text. The agent's own
    sections are named by what the agent wrote (it cannot know the reference's wording)."""
    name = section.name
    if section.headings:
        head = section.headings[0][0]
        head = head if len(head) <= 48 else head[:45].rsplit(" ", 1)[0] + "…"
        if name in ("section",):
            return f'{"your" if yours else "the"} part with "{head}"'
        return f'the {name} ("{head}")' if not yours else f"the {name}"
    return f"the {name}"


@dataclass(order=True)
class Difference:
    salience: float
    sentence: str = field(compare=False)


# --------------------------------------------------------------------------- comparison
def _match_sections(ref: Page, agent: Page) -> list[tuple[Section, Section | None]]:
    """Pair each reference section with its best agent counterpart (text, role, position)."""
    used: set[int] = set()
    pairs = []
    for k, rs in enumerate(ref.sections):
        best, best_score = None, 0.15
        rw = _words(" ".join(rs.texts))
        for j, ag in enumerate(agent.sections):
            if j in used:
                continue
            aw = _words(" ".join(ag.texts))
            text = len(rw & aw) / max(len(rw | aw), 1)
            rn, an = _family(rs.name), _family(ag.name)
            role = 0.35 if rn == an and rn != "section" else (0.1 if rn == an else 0.0)
            if rn != an and (rn in _ROLES or an in _ROLES):
                role -= 0.3  # a footer is not the counterpart of a pricing table, however placed
            pos = 0.25 * (1 - min(1.0, abs(k / max(len(ref.sections), 1) - j / max(len(agent.sections), 1)) * 2))
            score = text + role + pos
            if score > best_score:
                best, best_score = j, score
        if best is not None:
            used.add(best)
        pairs.append((rs, agent.sections[best] if best is not None else None))
    return pairs


def compare_pages(ref_dom: dict[str, Any], agent_dom: dict[str, Any]) -> list[Difference]:
    """All noticed differences, most salient first."""
    ref, agent = Page(ref_dom), Page(agent_dom)
    diffs: list[Difference] = []
    page_area = max(ref.width * max(ref.height, 1), 1)

    d = color_distance(ref.bg, agent.bg)
    if d > 60 and color_name(ref.bg) != color_name(agent.bg):
        diffs.append(Difference(1.2 * min(d / 300, 1.5),
                                f"The page background should be {color_name(ref.bg)}, not {color_name(agent.bg)}."))
    if font_kind(ref.font) != font_kind(agent.font):
        diffs.append(Difference(0.55, f"The text should use a {font_kind(ref.font)} font; yours looks {font_kind(agent.font)}."))

    pairs = _match_sections(ref, agent)
    matched_agent = {id(a) for _, a in pairs if a is not None}
    for k, (rs, ag) in enumerate(pairs):
        rb = rs.block
        area = rb.box[2] * rb.box[3] / page_area
        weight = 0.4 + min(area * 3, 1.0)
        if ag is None:
            what = _label(rs)
            extra = []
            if rb.own_bg and color_distance(rb.bg, ref.bg) > 40:
                extra.append(f"a {color_name(rb.bg)} background")
            if rs.columns >= 2:
                extra.append(f"{rs.columns} items side by side")
            if rs.images:
                extra.append("an image" if rs.images == 1 else f"{rs.images} images")
            detail = f" with {' and '.join(extra)}" if extra else ""
            where = "at the top" if k == 0 else ("at the bottom" if rb.box[1] + rb.box[3] >= ref.height - 5 else "")
            diffs.append(Difference(1.0 * weight + 0.3, f"I'm missing {what}{detail}{(' ' + where) if where else ''}."))
            continue
        ab = ag.block
        label = _label(ag, yours=True)
        # background of the section
        if rb.own_bg or ab.own_bg:
            d = color_distance(rb.bg, ab.bg)
            if d > 60 and color_name(rb.bg) != color_name(ab.bg):
                diffs.append(Difference(weight * min(d / 250, 1.5),
                                        f"{label[0].upper() + label[1:]} should have a {color_name(rb.bg)} background, not {color_name(ab.bg)}."))
        # heading colour and size
        if rs.heading_color and ag.heading_color:
            d = color_distance(rs.heading_color, ag.heading_color)
            if d > 80 and color_name(rs.heading_color) != color_name(ag.heading_color):
                diffs.append(Difference(0.5 * weight * min(d / 250, 1.5),
                                        f"The main text in {label} should be {color_name(rs.heading_color)}, not {color_name(ag.heading_color)}."))
        ratio = rs.heading_size / max(ag.heading_size, 1)
        if ratio > 1.35 or ratio < 0.74:
            bigger = "bigger" if ratio > 1 else "smaller"
            much = "much " if ratio > 1.8 or ratio < 0.55 else ""
            diffs.append(Difference(0.45 * weight * min(abs(np.log(ratio)) * 2, 1.5),
                                    f"The heading in {label} should be {much}{bigger} (about {rs.heading_size:.0f}px instead of {ag.heading_size:.0f}px)."))
        # layout
        if rs.columns != ag.columns and max(rs.columns, ag.columns) >= 2:
            if rs.columns >= 2:
                how = f"{rs.columns} items side by side" if ag.columns < 2 else f"{rs.columns} columns, not {ag.columns}"
                diffs.append(Difference(0.75 * weight, f"In {label} I want {how}."))
            else:
                diffs.append(Difference(0.6 * weight, f"In {label} the content should be stacked in one column, not {ag.columns} side by side."))
        if rs.align != ag.align:
            diffs.append(Difference(0.35 * weight, f"The text in {label} should be {'centred' if rs.align == 'center' else rs.align + '-aligned'}, not {'centred' if ag.align == 'center' else ag.align + '-aligned'}."))
        hr = rb.box[3] / max(ab.box[3], 1)
        if hr > 1.6 or hr < 0.6:
            diffs.append(Difference(0.5 * weight * min(abs(np.log(hr)), 1.5),
                                    f"{label[0].upper() + label[1:]} should be {'taller, with more space' if hr > 1 else 'more compact'} (roughly {rb.box[3]}px high, yours is {ab.box[3]}px)."))
        if rs.images != ag.images:
            if rs.images > ag.images:
                diffs.append(Difference(0.5 * weight, f"{label[0].upper() + label[1:]} needs {'an image' if rs.images - ag.images == 1 else str(rs.images - ag.images) + ' more images'}."))
            else:
                diffs.append(Difference(0.3 * weight, f"{label[0].upper() + label[1:]} should not have {'an image' if ag.images - rs.images == 1 else 'so many images'}."))
        # wording of the main heading
        if rs.headings:
            want = rs.headings[0][0]
            if want and want.lower() not in agent.all_text():
                have = ag.headings[0][0] if ag.headings else ""
                tail = f' instead of "{have[:60]}"' if have and have.lower() != want.lower() else ""
                diffs.append(Difference(0.45 * weight, f'The heading there should read "{want[:80]}"{tail}.'))
    for ag in agent.sections:
        if id(ag) not in matched_agent:
            area = ag.block.box[2] * ag.block.box[3] / page_area
            diffs.append(Difference(0.25 + min(area, 0.6), f"I don't need {_label(ag)}; please remove it."))
    if len(ref.sections) >= 2 and abs(len(ref.sections) - len(agent.sections)) >= 2:
        diffs.append(Difference(0.9, f"Overall the page should have about {len(ref.sections)} parts stacked top to bottom; yours has {len(agent.sections)}."))
    diffs.sort(reverse=True)
    return diffs


def describe_page(ref_dom: dict[str, Any], focus: str = "") -> list[Difference]:
    """What the reference looks like, as statements ranked by prominence (and by the question)."""
    ref = Page(ref_dom)
    focus = focus.lower()
    boost = {k: 0.8 for k, words in {
        "color": ("colour", "color", "palette", "background", "theme", "dark", "light"),
        "font": ("font", "typeface", "typography", "text size", "serif"),
        "layout": ("layout", "section", "column", "grid", "structure", "arrange", "header", "footer", "navigation"),
        "text": ("text", "title", "heading", "wording", "say", "name", "content"),
        "image": ("image", "picture", "photo", "banner", "logo"),
    }.items() if any(w in focus for w in words)}
    out = [Difference(1.0 + boost.get("color", 0), f"The page has a {color_name(ref.bg)} background with {color_name(ref.color)} text."),
           Difference(0.5 + boost.get("font", 0), f"It uses a {font_kind(ref.font)} font.")]
    names = [_label(s) for s in ref.sections]
    if names:
        out.append(Difference(0.9 + boost.get("layout", 0), "From top to bottom it has " + ", ".join(n.removeprefix("the ") for n in names[:6]) + "."))
    for k, s in enumerate(ref.sections[:6]):
        bits = []
        if s.block.own_bg and color_distance(s.block.bg, ref.bg) > 40:
            bits.append(f"a {color_name(s.block.bg)} background")
        if s.columns >= 2:
            bits.append(f"{s.columns} items side by side")
        if s.images:
            bits.append("an image" if s.images == 1 else f"{s.images} images")
        if s.align == "center":
            bits.append("centred text")
        if bits:
            sal = 0.7 - 0.05 * k + boost.get("layout", 0) / 2 + (boost.get("image", 0) if s.images else 0)
            out.append(Difference(sal, f"{_label(s)[0].upper() + _label(s)[1:]} has {', '.join(bits)}."))
    heads = [h for s in ref.sections for h, _ in s.headings[:1]]
    if heads:
        out.append(Difference(0.6 + boost.get("text", 0), f'The main heading says "{heads[0][:80]}".' if len(heads) == 1 else
                              "The headings read " + ", ".join(f'"{h[:50]}"' for h in heads[:3]) + "."))
    out.sort(reverse=True)
    return out


class OfflineFrontendSimulator(HumanSimulator):
    """Describes the most outstanding differences between the agent's and the reference page.

    Needs the environment's render context: ``reference_dom`` always, ``agent_dom`` when the
    agent's turn contained HTML (``agent_render_error`` when it failed to render).

    Args:
        max_points: how many differences a reply mentions (the most salient first).
    """

    kind = "frontend"

    def __init__(self, max_points: int = 3):
        if max_points < 1:
            raise ValueError("max_points must be >= 1")
        self.max_points = max_points
        self._rng = np.random.default_rng(0)

    def reset(self, task, *, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)

    def respond(self, task, dialogue: Dialogue, **context: Any) -> str:
        ref_dom = context.get("reference_dom")
        if not ref_dom:
            raise SimulatorError("the offline frontend simulator needs context['reference_dom'] (the rendered reference "
                                 "page's DOM summary); use it through ColBench-Frontend-v0, which provides it")
        agent_dom = context.get("agent_dom")
        question = dialogue[-1]["content"] if dialogue else ""
        if agent_dom is None:
            opener = ["I can't see a design from you yet, so here is what I picture.",
                      "You haven't shown me a page yet. What I have in mind:",
                      "No page to look at yet, but here is what I want."]
            if context.get("agent_render_error"):
                opener = [f"Your page didn't show up properly ({context['agent_render_error']}). What I want:"]
            points = describe_page(ref_dom, question)[: self.max_points + 1]
            return " ".join([opener[int(self._rng.integers(len(opener)))]] + [p.sentence for p in points])
        diffs = compare_pages(ref_dom, agent_dom)
        if not diffs:
            return str(self._rng.choice(["That looks just like what I had in mind.",
                                         "This is very close to what I want; I can't see any real difference."]))
        seen, points = set(), []
        for d in diffs:
            if d.sentence not in seen:
                seen.add(d.sentence)
                points.append(d.sentence)
            if len(points) >= self.max_points:
                break
        opener = ["Thanks, here is what differs most from what I want:", "Closer, but a few things stand out:",
                  "Compared with what I have in mind:"]
        return " ".join([opener[int(self._rng.integers(len(opener)))]] + points)
