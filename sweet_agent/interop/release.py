"""Our trajectory records in the paper release's exact shapes (facts: docs/interop.md).

The release's scripts assume, without checking most of it:

- **k-block order**: a best-of-k file holds ``n_tasks * k`` records, record ``i`` and
  ``i + n_tasks`` solve the same task (its evaluators assert this and reshape rewards to
  ``(k, n_tasks)``);
- **agent turns** carry ``content`` (text after the first ``OUTPUT:``), ``output`` (the raw text,
  cut before a second ``OUTPUT:``) and ``input`` (the whole chat-templated prompt string the agent
  saw: its step sampler finds no step without it, its pair builders raise ``KeyError``); the last
  turn of a trajectory is the agent's;
- **frontend answers** are the path of a PNG screenshot of the agent's last page (``"No answer"``
  when it wrote none); a missing file scores as a black image there.

Every other key of our records is kept (the release's scripts ignore keys they do not know), so an
exported file still carries ``meta``, ``success``, ``tests_passed``, ... and the answer's HTML
(``answer_html``) for the way back.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from colbench_gym.tasks.answer_images import is_image_file
from colbench_gym.tasks.identity import task_identity
from colbench_gym.tasks.kinds import FRONTEND, kind_of_task
from colbench_gym.tasks.records import official_task
from sweet_agent.trajectories import Record, TrajectoryFormatError, agent_turns

#: What the release writes as the answer of a frontend episode without any page.
NO_ANSWER = "No answer"
_EPISODE = re.compile(r"^(?P<task>[^:]+):(?P<sample>\d+)$")


class ExportError(TrajectoryFormatError):
    """The records cannot be written in the release's shape (the message says what to do)."""


def release_turn_text(raw: str) -> tuple[str, str]:
    """``(content, output)`` of an agent turn as the release's environments store them."""
    if "OUTPUT:" in raw:
        parts = raw.split("OUTPUT:")
        return parts[1], "OUTPUT:".join(parts[:2])
    return raw, raw


def _sample_index(rec: Mapping[str, Any], fallback: int) -> int:
    meta = rec.get("meta") if isinstance(rec.get("meta"), Mapping) else {}
    m = _EPISODE.match(str(meta.get("episode_id", "")))
    if m:
        return int(m.group("sample"))
    return int(meta["sample"]) if isinstance(meta.get("sample"), int) else fallback


def _task_index(rec: Mapping[str, Any]) -> tuple[int, int]:
    """Tasks in rollout order (the task index of ``meta.episode_id``) when known; else file order."""
    meta = rec.get("meta") if isinstance(rec.get("meta"), Mapping) else {}
    m = _EPISODE.match(str(meta.get("episode_id", "")))
    return (0, int(m.group("task"))) if m and m.group("task").isdigit() else (1, 0)


def k_block_order(records: Sequence[Record], *, drop_incomplete: bool = False) -> tuple[list[Record], dict[str, Any]]:
    """Records in the release's ``tasks x k`` block order, and a report.

    Tasks keep their order of first appearance; a task's samples are ordered by their sample
    number (``meta.episode_id`` / ``meta.sample``), else file order. Every task must have the same
    number of samples: otherwise :class:`ExportError`, unless ``drop_incomplete`` drops the tasks
    with fewer than the most samples any task has (reported).
    """
    groups: OrderedDict[str, list[tuple[int, int, Record]]] = OrderedDict()
    for i, rec in enumerate(records):
        groups.setdefault(task_identity(rec["task"]), []).append((_sample_index(rec, i), i, rec))
    if not groups:
        raise ExportError("no records to export")
    groups = OrderedDict(sorted(groups.items(), key=lambda kv: _task_index(kv[1][0][2])))
    counts = {key: len(v) for key, v in groups.items()}
    k = max(counts.values())
    short = [key for key, c in counts.items() if c < k]
    dropped = []
    if short:
        if not drop_incomplete:
            hist: dict[int, int] = {}
            for c in counts.values():
                hist[c] = hist.get(c, 0) + 1
            shape = ", ".join(f"{n} tasks x {c}" for c, n in sorted(hist.items(), reverse=True))
            raise ExportError(f"tasks have unequal sample counts ({shape}); the release's scripts need k samples "
                              f"of every task: pass --drop-incomplete to keep only the tasks with {k}")
        for key in short:
            dropped.append({"task": groups[key][0][2]["task"].get("problem_description", "")[:80], "samples": counts[key]})
            del groups[key]
    for v in groups.values():
        v.sort(key=lambda t: (t[0], t[1]))
    ordered = [groups[key][j][2] for j in range(k) for key in groups]
    return ordered, {"tasks": len(groups), "k": k, "records": len(ordered), "dropped_tasks": dropped}


def chat_renderer(tokenizer: Any) -> Callable[[list[dict[str, str]]], str]:
    """The prompt string a policy with ``tokenizer`` saw: its chat template with the generation
    prompt (what the release stores in ``input``)."""
    def render(messages: list[dict[str, str]]) -> str:
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return render


def is_frontend(rec: Mapping[str, Any], where: str = "record") -> bool:
    """Whether ``rec`` is a frontend episode (the release stores its answer as a screenshot); a
    task of no known kind is an :class:`ExportError`."""
    return kind_of_task(rec["task"], f"{where} task", error=ExportError) is FRONTEND


def to_release_record(rec: Record, render: Callable[[list[dict[str, str]]], str] | None,
                      answer_png: tuple[str, bool] | None = None) -> Record:
    """One record in the release's shape. Agent turns that already carry an ``input`` (a file that
    came from the release) keep it verbatim; others get ``render(prompt messages)``. ``answer_png``
    (frontend): ``(path, rendered)``; a rendered answer's original text is kept in ``answer_html``."""
    out: Record = {k: v for k, v in rec.items() if k != "dialogue_history"}
    out["task"] = official_task(rec["task"])  # the release reads test_cases as an object
    prompts = iter(list(agent_turns(rec)))
    history = []
    for turn in rec["dialogue_history"]:
        if turn["role"] != "assistant":
            history.append(dict(turn))
            continue
        messages, raw = next(prompts)
        h = {k: v for k, v in turn.items() if k != "prompt_messages"}
        if "output" not in turn:  # a bare agent turn: its content is what the model wrote
            raw = turn["content"]
        if not isinstance(turn.get("input"), str):
            if render is None:
                raise ExportError("agent turns have no 'input': name the policy's tokenizer with --tokenizer "
                                  "(records without meta.policy, or an API policy)")
            h["input"] = render(messages)
            h["content"], h["output"] = release_turn_text(raw)
        history.append(h)
    out["dialogue_history"] = history
    if is_frontend(rec) and answer_png is not None:
        path, rendered = answer_png
        if rendered:
            out.setdefault("answer_html", rec.get("answer"))
        out["answer"] = path
    return out


def frontend_page(rec: Mapping[str, Any]) -> str | None:
    """The page a frontend record's answer shows: its answer's HTML, else the last page in the
    dialogue (the release renders every page the agent writes and keeps the last)."""
    from colbench_gym.evaluation.frontend import dialogue_html
    from colbench_gym.protocol import extract_answer_html

    answer = rec.get("answer")
    html = extract_answer_html(answer) if isinstance(answer, str) else None
    return html if html is not None else dialogue_html(dict(rec))


def render_answers(records: Sequence[Record], image_dir: Path, *,
                   base_dir: Path | None = None) -> list[tuple[str, bool]]:
    """Screenshot every frontend answer into ``image_dir`` (``<i>.png``): per record ``(absolute
    path or NO_ANSWER, rendered here)``. An answer that is the screenshot its run stored (read
    only under the rule of :mod:`colbench_gym.tasks.answer_images`: written by the run, inside
    ``base_dir``, really an image) is copied into ``image_dir`` as a PNG, not rendered again."""
    from colbench_gym.rendering import Renderer, RendererError
    from colbench_gym.tasks.answer_images import run_image

    out: list[tuple[str, bool] | None] = [None] * len(records)
    todo: list[tuple[int, str]] = []
    for i, rec in enumerate(records):
        answer = rec.get("answer") if isinstance(rec.get("answer"), str) else ""
        image = run_image(answer, rec, base_dir)
        if image is not None:
            image_dir.mkdir(parents=True, exist_ok=True)
            path = (image_dir / f"{i}.png").resolve()
            image.save(path, format="PNG")
            out[i] = (str(path), False)
            continue
        page = frontend_page(rec)
        if page is None:
            out[i] = (NO_ANSWER, True)
        else:
            todo.append((i, page))
    if todo:
        image_dir.mkdir(parents=True, exist_ok=True)
        with Renderer() as renderer:
            shots = renderer.render_many([p for _, p in todo])
        for (i, _), shot in zip(todo, shots):
            if shot.infrastructure:  # the browser failed, not the page: a black image would be a lie
                task = str(records[i].get("task", {}).get("problem_description", ""))[:60]
                raise RendererError(f"the browser could not render the answer page of the task {task!r} "
                                    f"({shot.error}); run the export again")
            if shot.error is not None or not shot.data:
                out[i] = (NO_ANSWER, True)  # the release renders nothing either: a black image there
                continue
            path = (image_dir / f"{i}.png").resolve()
            shot.image().save(path, format="PNG")
            out[i] = (str(path), True)
    return [o if o is not None else (NO_ANSWER, True) for o in out]


def check_release_assumptions(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every assumption the release's scripts make about a file, checked; the violations found."""
    problems: list[str] = []
    n = len(records)
    for i, rec in enumerate(records):
        for key in ("task", "dialogue_history", "answer"):
            if key not in rec:
                problems.append(f"record {i}: no {key!r}")
    if problems:
        return problems
    n_tasks = len({task_identity(r["task"]) for r in records})
    if n_tasks == 0 or n % n_tasks:
        problems.append(f"{n} records are not a multiple of {n_tasks} tasks")
        return problems
    for i in range(n - n_tasks):  # evaluate_code.py / evaluate_html.py assert exactly this
        if records[i]["task"]["problem_description"] != records[i + n_tasks]["task"]["problem_description"]:
            problems.append(f"record {i} and record {i + n_tasks} are different tasks (k-block order)")
    for i, rec in enumerate(records):
        hist = rec["dialogue_history"]
        if not hist or hist[-1].get("role") != "assistant":
            problems.append(f"record {i}: the last turn is not the agent's (pair builders read dialogue_history[-1])")
        seen: list[str] = []
        for t, turn in enumerate(hist):
            if turn.get("role") == "assistant":
                if not all(isinstance(turn.get(k), str) for k in ("input", "output", "content")):
                    problems.append(f"record {i} turn {t}: agent turn without str input/output/content")
                elif not all(s.strip() in turn["input"] for s in seen):  # templates may trim
                    problems.append(f"record {i} turn {t}: 'input' does not contain the earlier dialogue")
            seen.append(str(turn.get("content", "")))
        if is_frontend(rec, f"record {i}"):
            ans = rec["answer"]
            if ans != NO_ANSWER and not (isinstance(ans, str) and ans.lower().endswith(".png") and is_image_file(ans)):
                problems.append(f"record {i}: frontend answer {str(ans)[:60]!r} is not an existing PNG image")
    return problems


def from_release_record(raw: Mapping[str, Any], clean: Mapping[str, Any]) -> Record:
    """Our clean form of a release record (``clean``: :func:`sweet_agent.trajectories.clean_paper_record`
    of ``raw``) with every key the clean form leaves out put back: unknown top-level keys and
    turn keys, and each agent turn's ``input`` (so an export back to the release is verbatim)."""
    out: Record = {**{k: v for k, v in raw.items() if k not in clean}, **clean}
    history = []
    for turn, c in zip(raw["dialogue_history"], clean["dialogue_history"]):
        history.append({**turn, **c})
    out["dialogue_history"] = history
    return out
