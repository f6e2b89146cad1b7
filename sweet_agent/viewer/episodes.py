"""Turn trajectory records into what the viewer shows: transcripts, verdicts, screenshots, credit.

Everything here is *data*: plain dicts of strings and numbers that the page renders with
``textContent`` only. Nothing from a trajectory is ever turned into markup on this side or in
the page; agent HTML reaches the viewer as screenshots (rendered in the sandboxed renderer of
:mod:`colbench_gym.rendering`), never as a document.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from colbench_gym.jsonl import write_bytes_atomic
from colbench_gym.protocol import extract_answer_html, extract_html, parse_action
from colbench_gym.tasks.accounting import END_REASONS, is_infrastructure
from colbench_gym.tasks.kinds import BACKEND, FRONTEND, kind_of_task
from colbench_gym.verdicts import score_answer
from sweet_agent.evaluation.metrics import agent_turn_kinds, episode_metrics

#: Text fields longer than this are cut in the page (the full text stays in the JSONL file).
MAX_TEXT = 20_000


def _clip(text: Any, limit: int = MAX_TEXT) -> str:
    s = text if isinstance(text, str) else ("" if text is None else str(text))
    # Lone surrogates cannot be written as UTF-8: make every string encodable first.
    s = s.encode("utf-8", "replace").decode("utf-8")
    return s if len(s) <= limit else s[:limit] + f"\n… [{len(s) - limit} more characters in the JSONL file]"


def task_title(task: Mapping[str, Any]) -> str:
    """A short name for a task: its function name (backend) or the first words of the request."""
    import re

    m = re.search(r"^\s*def\s+([A-Za-z_]\w*)", str(task.get("ground_truth") or ""), re.M)
    if m and BACKEND.is_record(task):
        return m.group(1)
    words = str(task.get("problem_description") or "").split()
    return " ".join(words[:8]) + ("…" if len(words) > 8 else "")


@dataclass
class ViewOptions:
    """What the site shows beyond the stored records."""

    show_expected: bool = False     # backend: the reference's value per test (spoils the task)
    tests: bool = True              # backend: grade each answer again for per-test verdicts
    screenshots: bool = True        # frontend: render answers, drafts and references to PNG files


class Screenshotter:
    """Renders HTML to PNG files under ``shots/`` (content-addressed, each page once)."""

    def __init__(self, out_dir: Path):
        self.dir = out_dir / "shots"
        self._renderer = None
        self._done: dict[str, str | None] = {}

    def _get(self):
        if self._renderer is None:
            from colbench_gym.rendering import Renderer

            self._renderer = Renderer()
        return self._renderer

    def html(self, html: str | None) -> str | None:
        """Relative path of the screenshot of ``html`` (``None`` when it cannot be rendered)."""
        if not html:
            return None
        key = hashlib.sha256(html.encode("utf-8", "surrogatepass")).hexdigest()[:20]
        if key not in self._done:
            rel = f"shots/{key}.png"
            try:
                res = self._get().render(html)
                if res.ok:
                    write_bytes_atomic(self.dir / f"{key}.png", res.png)
                    self._done[key] = rel
                else:
                    self._done[key] = None
            except Exception as exc:  # a page the browser cannot render is shown as "no screenshot"
                self._done[key] = None
                print(f"[view] could not render a page ({type(exc).__name__}: {exc}); shown without screenshot")
        return self._done[key]

    def image_file(self, answer: str, rec: Mapping[str, Any], base: Path) -> str | None:
        """Copy the screenshot the producing run stored as ``rec``'s answer (the release stores
        frontend answers as PNG paths) into the site — only under the one rule of
        :mod:`colbench_gym.tasks.answer_images` (written by the run, inside the trajectory
        file's folder, really an image): the site is meant to be shared."""
        from colbench_gym.tasks.answer_images import load_image_file, run_image_path

        src = run_image_path(answer, rec, base)
        if src is None or src.suffix.lower() != ".png" or load_image_file(src) is None:
            return None
        data = src.read_bytes()
        key = hashlib.sha256(data).hexdigest()[:20]
        self.dir.mkdir(parents=True, exist_ok=True)
        dst = self.dir / f"{key}.png"
        if not dst.exists():
            dst.write_bytes(data)  # the bytes that were checked, not whatever the path holds now
        return f"shots/{key}.png"

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None


class Verdicts:
    """Per-test verdicts of backend answers, graded again in the sandbox (one grader per site)."""

    def __init__(self, show_expected: bool):
        self.show_expected = show_expected
        self._grader = None
        self._cache: dict[tuple[str, str], tuple[list[dict[str, Any]], dict[str, Any] | None]] = {}

    def prefetch(self, items: Sequence[tuple[Mapping[str, Any], str]], workers: int = 2) -> None:
        """Grade many answers at once (the grader's sandbox pool serves threads in parallel)."""
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(lambda item: self(*item), items))

    def __call__(self, task: Mapping[str, Any], answer: str) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        from colbench_gym.tasks.identity import task_identity

        key = (task_identity(task), answer or "")
        if key not in self._cache:
            self._cache[key] = self._grade(task, answer)
        return self._cache[key]

    def _grade(self, task: Mapping[str, Any], answer: str) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        from colbench_gym.grading import get_default_grader
        from colbench_gym.tasks.records import BackendTask

        try:
            bt = BackendTask.from_record(task)
        except Exception as exc:  # a task that does not parse is shown, not fatal
            return [], {"reason": "task_error", "infrastructure": True, "text": f"task cannot be graded: {exc}"}
        if self._grader is None:
            self._grader = get_default_grader()
        verdict = score_answer(answer or "", bt, grader=self._grader)
        res, failure = verdict.artefact, verdict.end_reason  # the host's verdict, never the answer's text
        expected: dict[str, str] = {}
        if self.show_expected:
            outs = self._grader.reference_outputs(bt)
            if isinstance(outs, Mapping):
                expected = {k: _describe_outcome(v) for k, v in outs.items()}
            else:
                expected = {n: _describe_outcome(o) for n, o in zip(bt.test_cases, outs)}
        rows = []
        for name, call in bt.test_cases.items():
            ok = res.per_test.get(name)
            reason = res.reasons.get(name, "")
            verdict = "passed" if ok else ("not scored" if failure else
                                           "error" if res.error or "raise" in reason.lower() else "failed")
            row = {"name": name, "call": _clip(call, 2000), "verdict": verdict, "reason": _clip(reason, 2000)}
            if self.show_expected:
                row["expected"] = _clip(expected.get(name, ""), 2000)
            rows.append(row)
        if failure:
            return rows, {"reason": failure, "infrastructure": True,
                          "text": _clip(res.error or END_REASONS[failure].meaning, 2000)}
        return rows, ({"reason": "answer", "infrastructure": False, "text": _clip(res.error, 2000)}
                      if res.error else None)


def _error_of(meta: Mapping[str, Any]) -> dict[str, Any] | None:
    """A recorded grading error, attributed by the record's end reason (the host's verdict when it
    was written): an infrastructure failure (``grading_error``, ``task_error``) or the answer's own
    (its code failed to load or raised; scored 0). Old records without an end reason: the answer's."""
    text = _clip(meta.get("grade_error") or "", 2000)
    if not text:
        return None
    reason = meta.get("end_reason")
    infra = isinstance(reason, str) and is_infrastructure(reason)
    return {"reason": reason if infra else "answer", "infrastructure": infra, "text": text}


def outcome_of(end_reason: str | None, success: float | None, similarity: float | None, reward: float | None,
               grade_error: Mapping[str, Any] | None) -> str:
    """The episode's outcome in the viewer's words, decided by the end-reason table
    (:data:`colbench_gym.tasks.accounting.END_REASONS`), as every report decides it: an
    infrastructure failure is "not scored (<end reason>)", never the agent's failure nor a score;
    a reason whose answer was not graded (``agent_error``) is the agent's failure, scored 0; a
    graded answer (``answer``, ``turn_limit``, or a record that does not say) reads its score,
    and a backend answer whose own code failed (a SyntaxError, an exception at load) says so —
    "grading error" is kept for the infrastructure's failures."""
    entry = END_REASONS.get(end_reason) if end_reason else None
    if entry is not None and entry.infrastructure:
        return f"not scored ({end_reason})"
    if entry is not None and not entry.graded:
        return f"failed ({end_reason}: no usable turn, scored 0)"
    if success is not None:
        if success >= 1:
            return "success"
        answers_own = grade_error is not None and not grade_error.get("infrastructure")
        return "failed (the answer's code failed)" if answers_own else "failed"
    if similarity is not None:
        return f"similarity {similarity:.3f}"
    return "no score" if reward is None else f"reward {reward:.3f}"


def _whole(value: Any) -> int:
    return value if type(value) is int and value > 0 else 0


def _describe_outcome(o: Any) -> str:
    kind, value = getattr(o, "kind", None), getattr(o, "value", o)
    if kind == "raise":
        return f"raises {value}"
    if kind == "missing":
        return f"(no value: {value})"
    return repr(value)


def build_episode(rec: Mapping[str, Any], *, run: int, position: int, opts: ViewOptions,
                  shots: Screenshotter | None, verdicts: Verdicts | None, base: Path,
                  credit: Callable[[Mapping[str, Any]], list[float] | None] | None = None) -> dict[str, Any]:
    """The viewer's record of one episode (all text clipped and encodable)."""
    m = episode_metrics(rec, position)
    meta = rec.get("meta") or {}
    task = rec.get("task") or {}
    kinds = iter(agent_turn_kinds(rec))
    scores = credit(rec) if credit is not None else None
    turns: list[dict[str, Any]] = []
    k = 0
    last_html: str | None = None
    for msg in rec.get("dialogue_history") or []:
        role = msg.get("role")
        if role == "assistant":
            raw = msg.get("output") if isinstance(msg.get("output"), str) else msg.get("content", "")
            act = parse_action(raw if isinstance(raw, str) else "")
            turn = {"role": "agent", "kind": next(kinds, "statement"), "thought": _clip(act.thought),
                    "output": _clip(act.message)}
            html = extract_html(act.message)
            if html:
                last_html = html
                if shots is not None and m.kind == "frontend" and turn["kind"] != "answer":
                    turn["draft"] = shots.html(html)
            if scores is not None and k < len(scores):
                turn["credit"] = float(scores[k])
            k += 1
            turns.append(turn)
        elif role in ("user", "system"):
            turns.append({"role": "person" if role == "user" else "system", "output": _clip(msg.get("content"))})
    answer = rec.get("answer") if isinstance(rec.get("answer"), str) else ""
    ep: dict[str, Any] = {
        "run": run, "index": position, "id": _clip(meta.get("episode_id") or f"line {position + 1}", 200),
        "task_id": m.task_id, "task": _clip(task_title(task), 200), "sample": m.sample, "kind": m.kind,
        "reward": m.reward, "success": m.success, "tests_passed": m.tests_passed, "similarity": m.similarity,
        "turns": m.turns, "questions": m.questions, "ended_by": _clip(meta.get("ended_by") or "", 100),
        "end_reason": m.end_reason, "end_meaning": END_REASONS[m.end_reason].meaning if m.end_reason in END_REASONS else "",
        "error": _clip(rec.get("error") or meta.get("error") or "", 2000) or None,
        "grade_error": _error_of(meta),
        "truncated_turns": _whole(meta.get("length_truncated_turns")),
        "request": _clip(task.get("problem_description")), "answer": _clip(answer), "transcript": turns,
    }
    if scores is not None and scores:
        ep["credit_best"] = max(range(len(scores)), key=lambda i: scores[i])
    if m.kind == "backend" and verdicts is not None and opts.tests:
        ep["tests"], grade_error = verdicts(task, answer)
        recorded = ep["grade_error"]  # an infrastructure failure of the run stays what the run was
        ep["grade_error"] = grade_error or (recorded if recorded and recorded["infrastructure"] else None)
    ep["outcome"] = outcome_of(m.end_reason, m.success, m.similarity, m.reward, ep["grade_error"])
    if m.kind == "frontend" and shots is not None and opts.screenshots:
        png = answer.strip() if answer.strip().lower().endswith(".png") else None
        ep["answer_shot"] = (shots.image_file(png, rec, base) if png else None) or shots.html(
            (extract_answer_html(answer) if answer and not png else None) or last_html)
        ep["reference_shot"] = shots.html(task.get("ground_truth"))
    return ep


def build_episodes(runs: Sequence[tuple[str, Sequence[Mapping[str, Any]]]], out_dir: Path, opts: ViewOptions,
                   credit: Callable[[Mapping[str, Any]], list[float] | None] | None = None,
                   progress: bool = True) -> list[dict[str, Any]]:
    """Every episode of every run, in file order."""
    from tqdm.auto import tqdm

    # every record's kind first: a task of no known kind stops the build here, naming the record
    kind_of = {id(r): kind_of_task(r.get("task"), f"{path}[{i}] task") for path, recs in runs for i, r in enumerate(recs)}
    kinds = set(kind_of.values())
    shots = Screenshotter(out_dir) if opts.screenshots and FRONTEND in kinds else None
    verdicts = Verdicts(opts.show_expected) if opts.tests and BACKEND in kinds else None
    total = sum(len(recs) for _, recs in runs)
    if verdicts is not None:
        verdicts.prefetch([(r["task"], r.get("answer") if isinstance(r.get("answer"), str) else "")
                           for _, recs in runs for r in recs if kind_of[id(r)] is BACKEND])
    out: list[dict[str, Any]] = []
    try:
        with tqdm(total=total, disable=not progress, desc="[view] episodes", unit="ep", dynamic_ncols=True) as bar:
            for run, (path, recs) in enumerate(runs):
                base = Path(path).resolve().parent
                for i, rec in enumerate(recs):
                    out.append(build_episode(rec, run=run, position=i, opts=opts, shots=shots, verdicts=verdicts,
                                             base=base, credit=credit))
                    bar.update(1)
    finally:
        if shots is not None:
            shots.close()
    return out
