// ColBench trajectory viewer. Everything shown comes from untrusted model output: text is only
// ever written with textContent, attributes only from a fixed list, images only from this
// site's own shots/ and plots/ folders. Transcripts are built when an episode is opened.
(function () {
  "use strict";
  var V = window.COLBENCH_VIEW;
  var PAGE = 200;
  var shown = PAGE;
  var filtered = [];

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function safeImage(path, alt) {
    // Only files this site wrote: shots/<hex>.png or plots/<name>.png.
    if (typeof path !== "string" || !/^(shots\/[0-9a-f]+|plots\/[A-Za-z0-9_.-]+)\.png$/.test(path)) return null;
    var img = el("img", "shot");
    img.setAttribute("src", path);
    img.setAttribute("alt", alt);
    img.setAttribute("loading", "lazy");
    return img;
  }
  function fmt(x, digits) {
    if (x === null || x === undefined || Number.isNaN(x)) return "–";
    return Number(x).toFixed(digits === undefined ? 3 : digits);
  }
  function pct(x) { return x === null || x === undefined ? "–" : (100 * x).toFixed(1) + "%"; }
  function estimate(est, asPct) {
    if (!est || !est.n) return "–";
    var f = asPct ? pct : function (v) { return fmt(v, 2); };
    return f(est.mean) + " [" + f(est.low) + ", " + f(est.high) + "] n=" + est.n;
  }
  // The outcome's words come from the end-reason table (sweet_agent/viewer/episodes.py, outcome_of).
  function outcome(ep) { return ep.outcome; }
  function unscored(ep) { return ep.outcome.indexOf("not scored") === 0; }
  function cut(ep) {
    return ep.truncated_turns ? " · " + ep.truncated_turns + " turn(s) cut at the token limit" : "";
  }
  function table(headers, rows) {
    var t = el("table");
    var tr = el("tr");
    headers.forEach(function (h) { tr.appendChild(el("th", null, h)); });
    var thead = el("thead"); thead.appendChild(tr); t.appendChild(thead);
    var tb = el("tbody");
    rows.forEach(function (r) {
      var row = el("tr");
      r.forEach(function (c) { row.appendChild(c instanceof Node ? wrapCell(c) : el("td", null, c)); });
      tb.appendChild(row);
    });
    t.appendChild(tb);
    return t;
  }
  function wrapCell(node) { var td = el("td"); td.appendChild(node); return td; }

  function renderHeader() {
    var box = document.getElementById("runs");
    V.runs.forEach(function (r, i) {
      box.appendChild(el("span", "run-chip run-" + (i % 6), "run " + i + ": " + r.name + " (" + r.episodes + " episodes)"));
    });
    if (V.critic) box.appendChild(el("span", "run-chip critic", "critic: " + V.critic.name + " (" + V.critic.normalize + ")"));
  }

  function renderSummary() {
    var rows = V.summaries.map(function (s) {
      var m = s.metrics;
      return [V.runs[s.run].name, s.episodes, s.failed, estimate(m.success, true), estimate(m.tests_passed, true),
        estimate(m.similarity, false), estimate(m.turns, false), estimate(m.questions, false)];
    });
    document.getElementById("summary-table").appendChild(table(
      ["run", "episodes", "failed (errors)", "success", "tests passed", "similarity", "turns", "questions / episode"], rows));
    var plots = document.getElementById("plots");
    (V.plots || []).forEach(function (p) {
      var fig = el("figure", "plot");
      var img = safeImage(p.file, p.title);
      if (img) { fig.appendChild(img); fig.appendChild(el("figcaption", null, p.title)); plots.appendChild(fig); }
    });
  }

  function renderComparison() {
    if (!V.comparisons.length) return;
    var sec = document.getElementById("comparison");
    sec.hidden = false;
    var body = document.getElementById("comparison-body");
    V.comparisons.forEach(function (c) {
      var a = V.runs[c.a].name, b = V.runs[c.b].name;
      body.appendChild(el("h3", null, b + " vs " + a));
      body.appendChild(el("p", "comparison-line", c.pairs + " paired episodes (same task, same sample): " +
        c.wins + " wins, " + c.losses + " losses, " + c.ties + " ties; mean reward difference " +
        estimate(c.difference, false)));
      var rows = Object.keys(c.per_task).sort().map(function (tid) {
        var r = c.per_task[tid];
        var verdict = Math.abs(r.b - r.a) <= 1e-6 ? "tie" : (r.b > r.a ? "win" : "loss");
        return [V.tasks[tid] || tid, r.pairs, fmt(r.a), fmt(r.b), verdict];
      });
      body.appendChild(table(["task", "pairs", a, b, b + " vs " + a], rows));
    });
  }

  function renderTasks() {
    var per = {};
    V.episodes.forEach(function (ep) {
      var t = per[ep.task_id] = per[ep.task_id] || { runs: {} };
      var r = t.runs[ep.run] = t.runs[ep.run] || { n: 0, sum: 0, scored: 0 };
      r.n += 1;
      if (ep.reward !== null) { r.sum += ep.reward; r.scored += 1; }
    });
    var headers = ["task"];
    V.runs.forEach(function (r) { headers.push(r.name + ": episodes"); headers.push(r.name + ": mean reward"); });
    var rows = Object.keys(per).sort(function (x, y) { return (V.tasks[x] || x).localeCompare(V.tasks[y] || y); })
      .map(function (tid) {
        var row = [V.tasks[tid] || tid];
        V.runs.forEach(function (_, i) {
          var r = per[tid].runs[i];
          row.push(r ? r.n : 0);
          row.push(r && r.scored ? fmt(r.sum / r.scored) : "–");
        });
        return row;
      });
    document.getElementById("task-table").appendChild(table(headers, rows));
    var sel = document.getElementById("f-task");
    sel.appendChild(option("all", "all tasks"));
    Object.keys(per).sort().forEach(function (tid) { sel.appendChild(option(tid, V.tasks[tid] || tid)); });
    var rsel = document.getElementById("f-run");
    rsel.appendChild(option("all", "all runs"));
    V.runs.forEach(function (r, i) { rsel.appendChild(option(String(i), r.name)); });
  }
  function option(value, label) { var o = el("option", null, label); o.value = value; return o; }

  function searchText(ep) {
    if (ep._text === undefined) {
      var parts = [ep.task, ep.id, ep.request, ep.answer, ep.error || ""];
      ep.transcript.forEach(function (t) { parts.push(t.thought || "", t.output || ""); });
      ep._text = parts.join("\n").toLowerCase();
    }
    return ep._text;
  }

  function applyFilters() {
    var run = document.getElementById("f-run").value;
    var oc = document.getElementById("f-outcome").value;
    var task = document.getElementById("f-task").value;
    var tmin = parseInt(document.getElementById("f-turns-min").value, 10);
    var tmax = parseInt(document.getElementById("f-turns-max").value, 10);
    var q = document.getElementById("f-search").value.trim().toLowerCase();
    filtered = V.episodes.filter(function (ep) {
      if (run !== "all" && String(ep.run) !== run) return false;
      if (task !== "all" && ep.task_id !== task) return false;
      var o = outcome(ep);
      if (oc === "success" && o !== "success") return false;
      if (oc === "failed" && (o === "success" || unscored(ep))) return false;
      if (oc === "errors" && !(ep.error || ep.grade_error)) return false;
      if (!Number.isNaN(tmin) && ep.turns < tmin) return false;
      if (!Number.isNaN(tmax) && ep.turns > tmax) return false;
      if (q && searchText(ep).indexOf(q) < 0) return false;
      return true;
    });
    shown = PAGE;
    renderRows();
  }

  function renderRows() {
    var tb = document.querySelector("#episode-table tbody");
    tb.textContent = "";
    filtered.slice(0, shown).forEach(function (ep) {
      var tr = el("tr", "episode-row");
      tr.setAttribute("data-key", ep.run + ":" + ep.index);
      [V.runs[ep.run].name, ep.id, ep.task, fmt(ep.reward), ep.turns, ep.questions, outcome(ep) + cut(ep)]
        .forEach(function (c) { tr.appendChild(el("td", null, c)); });
      tr.addEventListener("click", function () { openEpisode(ep); });
      tb.appendChild(tr);
    });
    document.getElementById("f-count").textContent = filtered.length + " of " + V.episodes.length + " episodes";
    document.getElementById("more").hidden = filtered.length <= shown;
  }

  function creditColour(v, lo, hi) {
    // Diverging scale: negative credit red, positive green, zero white.
    var m = Math.max(Math.abs(lo), Math.abs(hi)) || 1;
    var t = Math.max(-1, Math.min(1, v / m));
    var r = t < 0 ? 255 : Math.round(255 - 120 * t), g = t > 0 ? 255 : Math.round(255 + 120 * t);
    var b = Math.round(255 - 120 * Math.abs(t));
    return "rgb(" + r + "," + g + "," + b + ")";
  }

  function openEpisode(ep) {
    var d = document.getElementById("detail");
    d.textContent = "";
    d.hidden = false;
    var close = el("button", "close", "close");
    close.type = "button";
    close.addEventListener("click", function () { d.hidden = true; d.textContent = ""; });
    d.appendChild(close);
    d.appendChild(el("h2", null, ep.task + " — " + ep.id + " (" + V.runs[ep.run].name + ")"));
    d.appendChild(el("p", "meta", "reward " + fmt(ep.reward) + " · " + ep.turns + " turns · " + ep.questions +
      " questions · " + outcome(ep) + (ep.ended_by ? " · ended by " + ep.ended_by : "")));
    if (ep.end_reason) d.appendChild(el("p", "meta", "end reason " + ep.end_reason + ": " + ep.end_meaning));
    if (ep.error) d.appendChild(el("p", "error", "episode error: " + ep.error));
    var credits = ep.transcript.filter(function (t) { return t.credit !== undefined; }).map(function (t) { return t.credit; });
    var lo = Math.min.apply(null, credits.concat([0])), hi = Math.max.apply(null, credits.concat([0]));
    var log = el("div", "transcript");
    var agentIndex = 0;
    var agentTurns = ep.transcript.filter(function (t) { return t.role === "agent"; }).length;
    // The record counts the turns cut at the token limit, not which: each is marked only when all were.
    var everyTurnCut = ep.truncated_turns > 0 && ep.truncated_turns >= agentTurns;
    ep.transcript.forEach(function (t) {
      var box = el("div", "turn " + t.role + (t.kind ? " " + t.kind : ""));
      var head = el("div", "turn-head", t.role === "agent" ? "agent — " + t.kind : t.role);
      box.appendChild(head);
      if (t.role === "agent") {
        if (t.credit !== undefined) {
          var badge = el("span", "credit", "critic advantage " + fmt(t.credit, 4));
          badge.style.backgroundColor = creditColour(t.credit, lo, hi);
          head.appendChild(badge);
          if (ep.credit_best === agentIndex) { box.classList.add("credited"); head.appendChild(el("span", "best", "most credited turn")); }
        }
        agentIndex += 1;
        if (everyTurnCut) head.appendChild(el("span", "cut", "cut off at the token limit"));
        if (t.thought) {
          var th = el("details", "thought");
          th.appendChild(el("summary", null, "private thought"));
          th.appendChild(el("pre", null, t.thought));
          box.appendChild(th);
        }
      }
      box.appendChild(el("pre", "output", t.output));
      if (t.draft !== undefined) {
        var img = safeImage(t.draft, "draft screenshot");
        box.appendChild(img || el("p", "muted", "(draft could not be rendered)"));
      }
      log.appendChild(box);
    });
    d.appendChild(el("h3", null, "Request"));
    d.appendChild(el("pre", "request", ep.request));
    d.appendChild(el("h3", null, "Dialogue"));
    d.appendChild(log);
    d.appendChild(el("h3", null, "Final answer"));
    if (ep.truncated_turns) d.appendChild(el("p", "muted", ep.truncated_turns + " agent turn(s) cut off at the token limit"
      + " (the model ran out of new tokens mid-reply)" + (everyTurnCut ? ", this answer too"
        : "; the record does not say which of the " + agentTurns + " agent turns")));
    d.appendChild(el("pre", "answer", ep.answer || "(no answer)"));
    if (ep.tests) {
      d.appendChild(el("h3", null, "Hidden tests"));
      var g = ep.grade_error;
      if (g) d.appendChild(el("p", "error", g.infrastructure
        ? g.reason + " (infrastructure, not the agent's; left out of the rates): " + g.text
        : "the answer's code failed (scored as failed): " + g.text));
      var headers = ["test", "call", "verdict", "why"];
      if (V.show_expected) headers.push("expected");
      d.appendChild(table(headers, ep.tests.map(function (r) {
        var row = [r.name, r.call, r.verdict, r.reason];
        if (V.show_expected) row.push(r.expected || "");
        return row;
      })));
    }
    if (ep.kind === "frontend") {
      var pair = el("div", "shots");
      [["answer", ep.answer_shot], ["reference", ep.reference_shot]].forEach(function (p) {
        var fig = el("figure");
        var img = safeImage(p[1], p[0] + " screenshot");
        fig.appendChild(img || el("p", "muted", "(no screenshot)"));
        fig.appendChild(el("figcaption", null, p[0]));
        pair.appendChild(fig);
      });
      d.appendChild(el("h3", null, "Screenshots"));
      d.appendChild(pair);
    }
    d.scrollIntoView();
  }

  function init() {
    renderHeader();
    renderSummary();
    renderComparison();
    renderTasks();
    ["f-run", "f-outcome", "f-task", "f-turns-min", "f-turns-max"].forEach(function (id) {
      document.getElementById(id).addEventListener("change", applyFilters);
    });
    document.getElementById("f-search").addEventListener("input", applyFilters);
    document.getElementById("filters").addEventListener("submit", function (e) { e.preventDefault(); });
    document.getElementById("more").addEventListener("click", function () { shown += PAGE; renderRows(); });
    applyFilters();
    document.body.setAttribute("data-ready", "1");
  }
  init();
})();
