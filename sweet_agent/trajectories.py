"""Trajectory records in the official ColBench offline shape, written safely and read back.

Shape (what the paper's ``colbench_code_offline_15k_llama8b.jsonl`` uses, plus two keys; the
dataset card with every field, type and the schema version is docs/trajectory-format.md)::

    {"task": {official task keys, "extra": JSON text of the task's other keys},
     "dialogue_history": [{"role": "user", "content": str},
                          {"role": "assistant", "content": str, "output": str}, ...],
     "answer": str, "reward": float in [0, 1] | None, "success": bool | None, "meta": {...}}

Agent turns keep the raw model text in ``output`` (private thought and markers included) and the
protocol's view in ``content``: the visible message, or on the answering turn the answer after
``I WANT TO ANSWER:``. ``reward`` is the fraction of hidden tests passed (backend) or the CLIP
similarity (frontend); ``success`` is all tests passing. ``meta`` carries what reproduces and
resumes a rollout: ``episode_id`` = ``"<task_index>:<sample>"``, seeds, the policy, the
system prompt the agent saw. Readers that only know the official keys ignore ``success``/``meta``.

Writing is append-only with ``fsync`` per episode, under an exclusive ``flock``, so a killed
rollout loses at most the episode being written; on ``resume`` a torn last line (no newline, or
not JSON) is cut off, every episode already on disk is skipped, never duplicated, and an episode
that failed for infrastructure reasons is played again (its record moved to ``<file>.replaced``).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import stat
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from colbench_gym.jsonl import JournalDamaged, jsonl_line, scan_journal, write_jsonl_atomic
from colbench_gym.protocol import Messages, parse_action
from colbench_gym.tasks.accounting import is_infrastructure_failure
from colbench_gym.tasks.identity import task_identity
from colbench_gym.tasks.kinds import kind_of_task
from colbench_gym.tasks.loaders import parse_jsonl_lines
from colbench_gym.tasks.records import (
    TRAJECTORY_KEYS,
    TRAJECTORY_SCHEMA_VERSION,
    RecordFormatError,
    check_trajectory_record,
    record_success,
    task_extras,
    trajectory_task,
)

Record = dict[str, Any]

#: Keys of the official offline trajectory record.
OFFICIAL_KEYS = TRAJECTORY_KEYS


class TrajectoryFormatError(RecordFormatError):
    """A record or file is not in the trajectory shape."""


# --------------------------------------------------------------------------- building records
def episode_id(task_index: int | str, sample: int) -> str:
    """The id that makes resume exact: one episode per (task index, sample k)."""
    return f"{task_index}:{sample}"


def dialogue_history(messages: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    """Turn the agent's view of a dialogue (``info["messages"]``: ``user`` = person, ``assistant``
    = raw agent turns) into official ``dialogue_history`` entries."""
    history = []
    for i, m in enumerate(messages):
        role, text = m.get("role"), m.get("content")
        if role not in ("user", "assistant") or not isinstance(text, str):
            raise TrajectoryFormatError(f"messages[{i}]: expected role user/assistant with str content, got {m!r:.80}")
        if role == "user":
            history.append({"role": "user", "content": text})
        else:
            parsed = parse_action(text)
            content = parsed.answer if parsed.is_answer else parsed.message
            history.append({"role": "assistant", "content": content, "output": text})
    return history


def make_record(task: Mapping[str, Any], messages: Sequence[Mapping[str, str]], *, answer: str, reward: float,
                success: bool | None, meta: Mapping[str, Any] | None = None) -> Record:
    """Build one trajectory record from an episode (``success`` is None where the env has no
    such notion, e.g. frontend similarity). The task takes the one trajectory shape
    (:func:`colbench_gym.tasks.records.trajectory_task`: its extra keys in one JSON text field)."""
    rec: Record = {
        "task": trajectory_task(task),
        "dialogue_history": dialogue_history(messages),
        "answer": answer,
        "reward": float(reward),
        "success": None if success is None else bool(success),
    }
    if meta:
        rec["meta"] = dict(meta)
    validate_record(rec)
    return rec


#: Keys every trajectory record must have; ``reward`` may be missing (the release's backend
#: rollouts carry none: its grader does not write it back) and is checked when present.
REQUIRED_KEYS = ("task", "dialogue_history", "answer")


def validate_record(rec: Any, where: str = "record", *, require_reward: bool = False) -> None:
    """Raise :class:`TrajectoryFormatError` naming the first thing that is wrong (the one official
    validator, :func:`colbench_gym.tasks.records.check_trajectory_record`). ``reward`` is optional
    unless ``require_reward``; a missing one then names the command that adds it."""
    check_trajectory_record(rec, where, REQUIRED_KEYS, error=TrajectoryFormatError)
    if rec.get("meta") is not None and not isinstance(rec["meta"], Mapping):
        raise TrajectoryFormatError(f"{where}: 'meta' must be a JSON object, got {type(rec['meta']).__name__}")
    if require_reward and rec.get("reward") is None and not rec.get("error"):
        raise TrajectoryFormatError(f"{where}: {missing_reward_hint(rec, where)}")


def missing_reward_hint(rec: Mapping[str, Any], where: str = "record") -> str:
    """Why a record without a reward cannot train, and the command that grades it (a task of no
    known kind is a :class:`TrajectoryFormatError` instead)."""
    env = kind_of_task(rec.get("task"), f"{where} task", error=TrajectoryFormatError).name
    return (f"no 'reward' (ungraded {env} trajectories, e.g. the release's rollouts); "
            f"grade first: colbench evaluate {env} IN --output OUT, then train on OUT")


# --------------------------------------------------------------------------- the rollout record schema
#: Every key of a rollout record's ``meta`` with its type, in order: one schema for every run,
#: whatever its options. WHY: ``datasets.load_dataset("json", data_files=[run1, run2])`` infers
#: an Arrow schema per file and casts every other file to the first file's, so a key present in
#: one run only (``exploration`` with ``--explore-rate``), a value null in one run and a string in
#: the other (``grade_error``), or an int in one and a float in the other, fails the load. So
#: every key is always present with its type, and "none" is ``""``, ``0`` or ``False``, never
#: null. (Lists have one entry per agent turn, so they are empty only for an episode that failed
#: before its first turn.) The record's top-level ``error`` is ``""`` when the episode did not fail.
TOKENS = {"prompt_tokens": int, "completion_tokens": int}
ROLLOUT_META: dict[str, Any] = {
    # the record schema (colbench_gym.tasks.records.TRAJECTORY_SCHEMA_VERSION; docs/trajectory-format.md)
    "schema_version": int,
    # what the run was made with (the --resume identity)
    "env": str, "tasks": str, "seed": int, "k": int, "policy": str, "simulator": str,
    # which episode
    "episode_id": str, "task_index": int, "sample": int, "task_id": str, "env_seed": int,
    # how it ended (colbench_gym.tasks.accounting): ended_by is "" when the episode failed first
    "turns": int, "max_turns": int, "ended_by": str, "end_reason": str, "infrastructure_failure": bool,
    "failed": bool, "error": str,
    # the grade (backend; 0 / "" for frontend and for failed episodes)
    "tests_passed": int, "tests_total": int, "tests_unpassable": int, "grade_error": str,
    # simulator replies the leak guard withheld (colbench_gym.simulators.leak_guard): regenerated or refused
    "simulator_leaks_blocked": int, "simulator_replies_refused": int,
    # cost: the agent's and the simulated person's models and tokens, the episode's wall time
    "agent_model": str, "simulator_model": str, "agent_usage": TOKENS, "simulator_usage": TOKENS,
    "wall_time_s": float, "completion_tokens": int, "length_truncated_turns": int,
    # how the agent was run
    "sampling": {"temperature": float, "top_p": float, "top_k": int, "max_new_tokens": int},
    "system_prompt": str,
    # question exploration (sweet_agent.policies.exploration): per agent turn the opener forced on
    # it, "" where the policy wrote the whole turn; ``prefilled`` counts the forced ones; ``rates``:
    # per agent turn the probability the behaviour policy had of forcing one (0 without exploration)
    "exploration": {"prefilled": int, "openers": [str], "rates": [float]},
}


def _conform(value: Any, kind: Any, where: str) -> Any:
    if isinstance(kind, dict):
        if not isinstance(value, Mapping):
            raise TrajectoryFormatError(f"meta.{where}: expected an object, got {type(value).__name__}")
        extra = set(value) - set(kind)
        if extra:
            raise TrajectoryFormatError(f"meta.{where}: unknown keys {sorted(extra)} (the schema: ROLLOUT_META)")
        return {k: _conform(value.get(k), t, f"{where}.{k}") for k, t in kind.items()}
    if isinstance(kind, list):
        return [_conform(v, kind[0], f"{where}[]") for v in (value or [])]
    if value is None:
        return kind()  # "none" in the type's own terms: "", 0, 0.0, False
    if kind is bool:
        return bool(value)
    if kind in (int, float) and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise TrajectoryFormatError(f"meta.{where}: expected a number, got {value!r:.60}")
    return kind(value)


def rollout_meta(**values: Any) -> dict[str, Any]:
    """A rollout record's ``meta`` in the one schema (:data:`ROLLOUT_META`): every key present,
    in order, with its type; a missing or null value becomes the type's "none" (``""``, ``0``,
    ``False``). An unknown key is an error (add it to the schema, for every run).
    ``schema_version`` is the current one unless given."""
    return _conform({"schema_version": TRAJECTORY_SCHEMA_VERSION, **values}, ROLLOUT_META, "")


def record_schema_version(rec: Mapping[str, Any]) -> int:
    """The trajectory schema version a record was written in: ``meta.schema_version``, else 1
    (records from before it, the paper's and release files included)."""
    meta = rec.get("meta")
    version = meta.get("schema_version") if isinstance(meta, Mapping) else None
    return version if isinstance(version, int) and not isinstance(version, bool) and version > 0 else 1


def record_task_extras(rec: Mapping[str, Any]) -> dict[str, Any]:
    """The extra keys of a record's task (``source``, ``index``, ``family``, ...), from either
    schema version (:func:`colbench_gym.tasks.records.task_extras`)."""
    task = rec.get("task")
    return task_extras(task) if isinstance(task, Mapping) else {}


def record_prefilled_turns(rec: Mapping[str, Any]) -> int:
    """How many agent turns of a record a behaviour policy started (exploration openers), in the
    current schema or the older one (``meta.exploration.prefilled_turns``, a list, present only
    on explored records)."""
    exp = (rec.get("meta") or {}).get("exploration") if isinstance(rec.get("meta"), Mapping) else None
    if not isinstance(exp, Mapping):
        return 0
    if isinstance(exp.get("prefilled"), int):
        return exp["prefilled"]
    return len(exp.get("prefilled_turns") or [])


def record_episode_id(rec: Mapping[str, Any]) -> str | None:
    meta = rec.get("meta")
    return meta.get("episode_id") if isinstance(meta, Mapping) else None


#: How many times ``resume`` plays an episode again after an infrastructure failure; an episode
#: that failed that often the same way (a task no grader can use, a reference that never runs)
#: keeps its failed record, so a run can finish, and reports count it apart.
MAX_REPLAYS = 2


def replaced_path(path: str | os.PathLike[str]) -> Path:
    """Where ``resume`` moves the records of episodes it plays again."""
    path = Path(os.path.realpath(path))
    return path.with_name(path.name + ".replaced")


def replay_counts(path: str | os.PathLike[str]) -> Counter[str]:
    """How many times each episode of ``path`` was already taken out to be played again."""
    side = replaced_path(path)
    counts: Counter[str] = Counter()
    if side.is_file():
        with side.open("rb") as fh:
            for _, rec in parse_jsonl_lines(fh, str(side), torn_tail=True, error=TrajectoryFormatError):
                eid = record_episode_id(rec) if isinstance(rec, Mapping) else None
                if eid is not None:
                    counts[eid] += 1
    return counts


# --------------------------------------------------------------------------- agent prompts
def agent_turns(rec: Mapping[str, Any], system_prompt: str | None = None) -> Iterator[tuple[Messages, str]]:
    """Yield ``(prompt_messages, output)`` for each agent turn: the chat messages the agent saw
    (system prompt first when known) and its raw text. Paper records with a pre-rendered
    Llama-3 ``input`` yield the messages parsed from it."""
    system = system_prompt
    if system is None and isinstance(rec.get("meta"), Mapping):
        system = rec["meta"].get("system_prompt")
    msgs: Messages = [{"role": "system", "content": system}] if system else []
    for turn in rec["dialogue_history"]:
        if turn["role"] == "assistant":
            output = turn.get("output", turn["content"])
            if isinstance(turn.get("prompt_messages"), list) and system_prompt is None:
                yield [dict(m) for m in turn["prompt_messages"]], output
            elif isinstance(turn.get("input"), str) and system_prompt is None:
                yield parse_llama3_prompt(turn["input"]), output
            else:
                yield [dict(m) for m in msgs], output
            msgs.append({"role": "assistant", "content": output})
        else:
            msgs.append({"role": turn["role"], "content": turn["content"]})


# --------------------------------------------------------------------------- safe writing
def _parse_record(line: bytes) -> Record:
    """One line of a trajectory file, parsed and validated (a resume's scan)."""
    rec = json.loads(line)
    validate_record(rec)
    return rec


class TrajectoryWriter:
    """Append records to a JSONL file, one ``fsync``'d line per finished episode.

    ``resume=True`` keeps what is on disk (cutting a torn last line) and exposes the finished
    episode ids in :attr:`done`; ``overwrite=True`` starts afresh; otherwise an existing
    non-empty file is an error (so a finished run is never clobbered by accident).

    An episode that failed for infrastructure reasons (:func:`is_infrastructure_failure`: the
    endpoint, the simulator, the grader, the task — not the agent) is not finished: ``resume``
    takes its record out of the file (moved to ``<file>.replaced``, nothing is lost) so it is
    played again, as the rollout's "fix the cause, then rerun with --resume" promises; after
    :data:`MAX_REPLAYS` such attempts its failed record stays (:attr:`kept_failures`). Otherwise a
    resumed run would report on fewer episodes than planned, and two methods would be compared on
    different tasks. An agent's own failure (``agent_error``) is a scored episode and stays.
    """

    def __init__(self, path: str | os.PathLike[str], *, resume: bool = False, overwrite: bool = False):
        if resume and overwrite:
            raise ValueError("pass resume=True or overwrite=True, not both")
        self.path = Path(os.path.realpath(path))  # a symlinked output: its target is what a resume rewrites
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists() and self.path.stat().st_size > 0 and not (resume or overwrite):
            raise FileExistsError(
                f"{self.path} already holds trajectories; pass --resume to continue it or --overwrite to replace it"
            )
        self._fh = self._open_locked(
            f"{self.path} is being written by another process (locked); wait for it or pick another --output")
        if overwrite:
            self._fh.truncate(0)
        self.done: Counter[str] = Counter()
        self.records_on_disk = 0
        self.torn_bytes = 0
        self.replayed: list[str] = []  # episode ids taken out on resume, to be played again
        self.kept_failures: list[str] = []  # infrastructure failures kept: already replayed MAX_REPLAYS times
        if resume:
            self._scan_and_repair()

    def _open_locked(self, busy: str):
        """The file opened for appending under an exclusive lock; the lock is checked to be on the
        inode the path names now (a resume of another process may have replaced the file between
        our open and our lock: then we open it again)."""
        for _ in range(3):
            fh = open(self.path, "a+b")  # noqa: SIM115 - closed in close()
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                fh.close()
                raise RuntimeError(busy) from None
            try:
                same = os.fstat(fh.fileno()).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                return fh
            fh.close()
        raise RuntimeError(busy)

    def _scan_and_repair(self) -> None:
        self._fh.seek(0)
        data = self._fh.read()
        replay: list[tuple[int, int]] = []  # byte spans of infrastructure-failed records
        before = replay_counts(self.path)
        try:
            entries, good_end = scan_journal(data, _parse_record,
                                             (json.JSONDecodeError, UnicodeDecodeError, TrajectoryFormatError))
        except JournalDamaged as exc:
            raise TrajectoryFormatError(
                f"{self.path}: line at byte {exc.pos} is not a trajectory record and is not the last "
                "line; the file is damaged in the middle, refusing to resume (fix or move it)"
            ) from None
        for start, end, rec in entries:
            eid = record_episode_id(rec)
            if eid is not None and is_infrastructure_failure(rec):
                if before[eid] < MAX_REPLAYS:
                    replay.append((start, end))
                    self.replayed.append(eid)
                else:  # failed the same way every time (a task the grader cannot use): it stays
                    self.kept_failures.append(eid)
                    self._count(rec)
            else:
                self._count(rec)
        if good_end < len(data):
            self.torn_bytes = len(data) - good_end
            self._fh.truncate(good_end)
            self._fh.flush()
            os.fsync(self._fh.fileno())
        if replay:
            self._take_out(data[:good_end], replay)

    def _take_out(self, data: bytes, spans: list[tuple[int, int]]) -> None:
        """Move the records at ``spans`` to ``<file>.replaced`` (appended, fsync'd first; not
        again after a crash between the two steps), then replace the file by the rest atomically
        (same permissions) and hold the lock on the new file."""
        moved = b"".join(data[a:b] for a, b in spans)
        side_path = replaced_path(self.path)
        already = side_path.read_bytes().endswith(moved) if side_path.is_file() else False
        if not already:
            with open(side_path, "ab") as side:
                side.write(moved)
                side.flush()
                os.fsync(side.fileno())
        kept, last = [], 0
        for a, b in spans:
            kept.append(data[last:a])
            last = b
        kept.append(data[last:])
        tmp = self.path.with_name(self.path.name + ".resume-tmp")
        with open(tmp, "wb") as fh:
            fh.write(b"".join(kept))
            fh.flush()
            os.fchmod(fh.fileno(), stat.S_IMODE(os.fstat(self._fh.fileno()).st_mode))
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        old = self._fh  # stays locked by us until the new inode is
        try:
            self._fh = self._open_locked(f"{self.path} was taken by another process while resuming; wait for it")
        finally:
            fcntl.flock(old, fcntl.LOCK_UN)
            old.close()

    def write(self, rec: Record) -> None:
        validate_record(rec)
        line = (jsonl_line(rec) + "\n").encode("utf-8")
        self._fh.seek(0, os.SEEK_END)
        self._fh.write(line)
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._count(rec)

    def _count(self, rec: Record) -> None:
        """Book one record that is on disk (read on resume, or just written)."""
        eid = record_episode_id(rec)
        if eid is not None:
            self.done[eid] += 1
        self.records_on_disk += 1

    def close(self) -> None:
        if not self._fh.closed:
            fcntl.flock(self._fh, fcntl.LOCK_UN)
            self._fh.close()

    def __enter__(self) -> TrajectoryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------- reading
def iter_trajectories(path: str | os.PathLike[str], *, validate: bool = True,
                      require_reward: bool = True) -> Iterator[Record]:
    """Yield records from a JSONL file. A torn *last* line (an interrupted write) is skipped;
    a bad line anywhere else is an error naming file and line. ``require_reward`` (the default,
    for training) stops at the first ungraded record with the command that grades it; readers
    that need no reward (evaluation, regrading, viewing, export) pass False."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such trajectory file (collect one with `sweet-agent rollout`)")
    with path.open("rb") as fh:  # streamed (the paper's file is hundreds of MB), decoded per line
        for lineno, rec in parse_jsonl_lines(fh, str(path), torn_tail=True, error=TrajectoryFormatError):
            rec = from_json_columns(rec, f"{path}:{lineno}")
            if validate:
                validate_record(rec, f"{path}:{lineno}", require_reward=require_reward)
            yield rec


def from_json_columns(rec: Record, where: str = "record") -> Record:
    """A record whose ``meta`` is a JSON string — a row of :func:`to_hf_dataset` written out with
    ``Dataset.to_json`` (``task.test_cases``, ``meta`` and ``extra`` as JSON strings), or any
    file that stores ``meta`` that way — back in the official shape; other records unchanged.
    A ``meta`` string that is not a JSON object is an error naming ``where``."""
    meta = rec.get("meta")
    if not isinstance(meta, str):
        return rec
    task = rec.get("task")
    try:
        if isinstance(rec.get("extra"), str) and isinstance(task, dict) and "extra" in task:
            return from_hf_row(rec)  # the to_hf_dataset layout: invert it whole
        parsed = json.loads(meta) if meta.strip() else {}
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        raise TrajectoryFormatError(f"{where}: 'meta' is a string that is not a JSON object ({exc}); "
                                    "write meta as an object (or as the JSON text of one)") from None
    if not isinstance(parsed, dict):
        raise TrajectoryFormatError(f"{where}: 'meta' is a JSON string holding {type(parsed).__name__}, "
                                    "not an object")
    return {**rec, "meta": parsed}


def read_trajectories(path: str | os.PathLike[str], *, validate: bool = True,
                      require_reward: bool = True) -> list[Record]:
    return list(iter_trajectories(path, validate=validate, require_reward=require_reward))


# --------------------------------------------------------------------------- HF datasets
#: Top-level keys with a column of their own; every other key (``tests_passed``, ``tests_total``,
#: ``similarity``, ``error``, ... written by the evaluators) travels in the ``extra`` JSON column.
_COLUMNS = ("task", "dialogue_history", "answer", "reward", "success", "meta")
#: Marks, in a row's ``task.extra``, test cases that the record held as JSON text (schema 2).
_TESTS_AS_TEXT = "__test_cases_text__"
_TURN_COLUMNS = ("role", "content", "output", "input", "prompt_messages")


def _extras(d: Mapping[str, Any], columns: tuple[str, ...], optional: tuple[str, ...]) -> str:
    """JSON of the keys without a column, plus which optional column keys are present (so that
    an absent ``reward`` and ``"reward": null`` both come back as they were)."""
    extra = {k: v for k, v in d.items() if k not in columns}
    extra["__present__"] = [k for k in optional if k in d]
    return json.dumps(extra, ensure_ascii=False)


def _restore(out: dict[str, Any], extra_json: str | None, defaults: Mapping[str, Any]) -> None:
    """Invert :func:`_extras` on ``out`` (``defaults``: the optional keys' column values)."""
    extra = json.loads(extra_json) if extra_json else {}
    present = extra.pop("__present__", None)
    for k, v in defaults.items():
        if (k in present) if present is not None else v is not None:
            out[k] = v
    out.update(extra)


def _flatten_for_arrow(rec: Mapping[str, Any]) -> dict[str, Any]:
    """Arrow needs one schema for all rows: dict-valued fields whose keys vary between tasks
    (``test_cases``, ``meta``) travel as JSON strings; turns get every optional key; keys without
    a column travel in ``extra`` (record and turn level), so the round trip keeps every field."""
    task = dict(rec["task"])
    others = {k: v for k, v in task.items() if k not in ("problem_description", "ground_truth", "test_cases")}
    if isinstance(task.get("test_cases"), Mapping):
        task["test_cases"] = json.dumps(task["test_cases"], ensure_ascii=False)
    elif isinstance(task.get("test_cases"), str):  # schema 2 keeps them as JSON text: so does the round trip
        others[_TESTS_AS_TEXT] = True
    task_json = json.dumps(others, ensure_ascii=False)
    return {
        "task": {"problem_description": task["problem_description"], "ground_truth": task.get("ground_truth", ""),
                 "test_cases": task.get("test_cases"), "extra": task_json},
        "dialogue_history": [{"role": t["role"], "content": t["content"], "output": t.get("output"),
                              "input": t.get("input"), "prompt_messages": t.get("prompt_messages"),
                              "extra": _extras(t, _TURN_COLUMNS, _TURN_COLUMNS[2:])}
                             for t in rec["dialogue_history"]],
        "answer": rec["answer"],
        "reward": None if rec.get("reward") is None else float(rec["reward"]),
        "success": None if rec.get("success") is None else bool(rec["success"]),
        "meta": json.dumps(rec.get("meta") or {}, ensure_ascii=False),
        "extra": _extras(rec, _COLUMNS, ("reward", "success", "meta")),
    }


def to_hf_dataset(source: str | os.PathLike[str] | Iterable[Mapping[str, Any]]):
    """Trajectories (a JSONL path or records) as a ``datasets.Dataset``; see :func:`from_hf_row`."""
    try:
        import datasets
    except ImportError as exc:  # pragma: no cover - depends on extras
        raise ImportError("to_hf_dataset needs `datasets`: pip install 'colbench-gym[agent]'") from exc
    records = (read_trajectories(source, require_reward=False) if isinstance(source, (str, os.PathLike))
               else list(source))
    if not records:
        raise TrajectoryFormatError("no trajectory records to convert")
    features = datasets.Features({
        "task": {"problem_description": datasets.Value("string"), "ground_truth": datasets.Value("string"),
                 "test_cases": datasets.Value("string"), "extra": datasets.Value("string")},
        "dialogue_history": datasets.List({"role": datasets.Value("string"), "content": datasets.Value("string"),
                                           "output": datasets.Value("string"), "input": datasets.Value("string"),
                                           "prompt_messages": datasets.List({"role": datasets.Value("string"),
                                                                             "content": datasets.Value("string")}),
                                           "extra": datasets.Value("string")}),
        "answer": datasets.Value("string"),
        "reward": datasets.Value("float64"),
        "success": datasets.Value("bool"),
        "meta": datasets.Value("string"),
        "extra": datasets.Value("string"),
    })
    return datasets.Dataset.from_list([_flatten_for_arrow(r) for r in records], features=features)


def from_hf_row(row: Mapping[str, Any]) -> Record:
    """Invert :func:`to_hf_dataset` for one row: back to the official record dict."""
    t = row["task"]
    task: dict[str, Any] = {"problem_description": t["problem_description"], "ground_truth": t["ground_truth"]}
    others = json.loads(t.get("extra") or "{}")
    if t.get("test_cases") is not None:
        task["test_cases"] = t["test_cases"] if others.pop(_TESTS_AS_TEXT, False) else json.loads(t["test_cases"])
    task.update(others)
    history = []
    for turn in row["dialogue_history"]:
        h = {"role": turn["role"], "content": turn["content"]}
        _restore(h, turn.get("extra"), {k: turn.get(k) for k in _TURN_COLUMNS[2:]})
        history.append(h)
    rec: Record = {"task": task, "dialogue_history": history, "answer": row["answer"]}
    if row.get("extra") is None:  # a dataset written before the extra column: reward always present
        rec["reward"] = row["reward"]
    meta = json.loads(row.get("meta") or "{}")
    _restore(rec, row.get("extra"), {"reward": row["reward"], "success": row.get("success"), "meta": meta if row.get("extra") else (meta or None)})
    return rec


# --------------------------------------------------------------------------- the paper's offline file
_LLAMA3_TURN = re.compile(r"<\|start_header_id\|>(\w+)<\|end_header_id\|>\n\n(.*?)(?:<\|eot_id\|>|\Z)", re.DOTALL)
_LLAMA31_PREAMBLE = re.compile(r"\A(?:Environment: [^\n]*\n)?Cutting Knowledge Date: [^\n]*\nToday Date: [^\n]*\n\n?")


def parse_llama3_prompt(text: str) -> Messages:
    """Recover role/content messages from a Llama-3(.1) chat-templated prompt string.

    Drops ``<|begin_of_text|>``, the template's own "Cutting Knowledge Date / Today Date" lines
    from the system message, and the trailing empty assistant header (the generation prompt),
    so the messages can be re-rendered with any other model's chat template.
    """
    if "<|start_header_id|>" not in text:
        raise TrajectoryFormatError("not a Llama-3 chat-templated prompt (no <|start_header_id|> headers)")
    messages: Messages = []
    for m in _LLAMA3_TURN.finditer(text):
        role, content = m.group(1), m.group(2)
        if role == "system":
            content = _LLAMA31_PREAMBLE.sub("", content, count=1)
            if not content.strip():
                continue
        messages.append({"role": role, "content": content})
    if messages and messages[-1]["role"] == "assistant" and not messages[-1]["content"]:
        messages.pop()  # generation prompt
    return messages


def clean_paper_record(rec: Mapping[str, Any], *, sample: int | None = None, index: int | None = None) -> Record:
    """One record of the paper's offline file in our clean form: the pre-rendered ``input`` of
    each agent turn becomes ``prompt_messages`` (plain role/content), the system prompt moves
    to ``meta.system_prompt``; role/content/output and the official keys stay as they were."""
    validate_record(rec, "paper record" if index is None else f"paper record {index}")
    history: list[dict[str, Any]] = []
    system_prompt = None
    for turn in rec["dialogue_history"]:
        h = {"role": turn["role"], "content": turn["content"]}
        if turn["role"] == "assistant":
            h["output"] = turn.get("output", turn["content"])
            if isinstance(turn.get("input"), str):
                msgs = parse_llama3_prompt(turn["input"])
                if msgs and msgs[0]["role"] == "system":
                    system_prompt = system_prompt or msgs[0]["content"]
                h["prompt_messages"] = msgs
        history.append(h)
    out: Record = {"task": dict(rec["task"]), "dialogue_history": history, "answer": rec["answer"]}
    if "reward" in rec:  # the release's backend rollouts have none (grade them to add it)
        out["reward"] = rec["reward"]
    success = record_success(rec)
    if success is not None:
        out["success"] = bool(success)
    meta = dict(rec.get("meta") or {})
    if system_prompt:
        meta.setdefault("system_prompt", system_prompt)
    if sample is not None:
        meta.setdefault("sample", sample)
    if index is not None:
        meta.setdefault("source_line", index)
    out["meta"] = meta
    return out


def iter_paper_offline(path: str | os.PathLike[str]) -> Iterator[Record]:
    """Stream ``colbench_code_offline_15k_llama8b.jsonl`` (or any file in its shape) as clean records.

    The paper's file holds 5k tasks x 3 samples as consecutive blocks; ``meta.sample`` is the
    sample number of each record among the records of the same task (0, 1, 2), which does not
    depend on that layout.
    """
    seen: Counter[str] = Counter()
    for i, rec in enumerate(iter_trajectories(path, require_reward=False), 1):
        key = task_identity(rec["task"])
        yield clean_paper_record(rec, sample=seen[key], index=i)
        seen[key] += 1


def load_paper_offline(path: str | os.PathLike[str]) -> list[Record]:
    """All of :func:`iter_paper_offline` as a list."""
    return list(iter_paper_offline(path))


__all__ = [
    "OFFICIAL_KEYS", "ROLLOUT_META", "Record", "TrajectoryFormatError", "TrajectoryWriter", "agent_turns", "clean_paper_record",
    "dialogue_history", "episode_id", "from_hf_row", "from_json_columns", "iter_paper_offline", "iter_trajectories", "load_paper_offline", "make_record",
    "parse_llama3_prompt", "read_trajectories", "record_episode_id", "record_prefilled_turns", "record_schema_version",
    "record_task_extras", "rollout_meta", "to_hf_dataset", "validate_record",
    "write_jsonl_atomic",
]
