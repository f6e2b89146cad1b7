"""The in-page script that summarises a rendered page for the offline frontend simulator.

Kept as a Python string (not a ``.js`` file) so it ships in every install without package-data
rules. It returns one row per visible element (document order, at most ``maxNodes``) with its
box, computed colours and fonts, alignment, layout and own text.
"""

DOM_JS = r"""(maxNodes) => {
  // A compact, JSON-able description of what is visible on the page: one row per visible element
  // (document order), with its box, computed colours/fonts and own text. Read by the offline
  // simulator to describe differences the way a person looking at the screenshot would.
  const rows = [];
  const index = new Map();
  const sx = window.scrollX, sy = window.scrollY;
  const own = (el) => Array.from(el.childNodes).filter((n) => n.nodeType === 3)
    .map((n) => n.textContent).join(' ').replace(/\s+/g, ' ').trim().slice(0, 160);
  const all = document.body ? document.body.querySelectorAll('*') : [];
  for (const el of all) {
    if (rows.length >= maxNodes) break;
    const tag = el.tagName.toLowerCase();
    if (tag === 'script' || tag === 'style' || tag === 'link' || tag === 'meta' || tag === 'br') continue;
    const cs = getComputedStyle(el);
    const r = el.getBoundingClientRect();
    if (cs.display === 'none' || cs.visibility === 'hidden' || r.width < 1 || r.height < 1 || parseFloat(cs.opacity) === 0) continue;
    let p = el.parentElement, parent = -1;
    while (p && p !== document.body) { if (index.has(p)) { parent = index.get(p); break; } p = p.parentElement; }
    index.set(el, rows.length);
    rows.push({
      tag, parent, text: own(el),
      x: Math.round(r.left + sx), y: Math.round(r.top + sy), w: Math.round(r.width), h: Math.round(r.height),
      color: cs.color, bg: cs.backgroundColor, bgimg: cs.backgroundImage !== 'none',
      font: cs.fontFamily.split(',')[0].replace(/["']/g, '').trim(), size: parseFloat(cs.fontSize),
      weight: parseInt(cs.fontWeight, 10) || 400, align: cs.textAlign, display: cs.display,
      dir: cs.flexDirection, cols: cs.display.includes('grid') ? cs.gridTemplateColumns.split(' ').filter(Boolean).length : 0,
      justify: cs.justifyContent, radius: parseFloat(cs.borderTopLeftRadius) || 0,
      shadow: cs.boxShadow !== 'none', border: parseFloat(cs.borderTopWidth) || 0,
      src: tag === 'img' ? (el.getAttribute('src') || '') : undefined,
    });
  }
  const b = document.body ? getComputedStyle(document.body) : null;
  const de = document.documentElement;
  return {
    title: document.title || '',
    width: Math.max(de.scrollWidth, document.body ? document.body.scrollWidth : 0),
    height: Math.max(de.scrollHeight, document.body ? document.body.scrollHeight : 0),
    body: b ? { color: b.color, bg: b.backgroundColor, htmlbg: getComputedStyle(de).backgroundColor,
                font: b.fontFamily.split(',')[0].replace(/["']/g, '').trim(), size: parseFloat(b.fontSize) } : null,
    nodes: rows,
    truncated: rows.length >= maxNodes,
  };
}
"""
