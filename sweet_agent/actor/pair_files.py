"""Step-pair files: shards, the turn journal that makes the stage resumable, and their merge.

A step-pair file ``PAIRS.jsonl`` (TRL's conversational DPO rows, one per pair) has a sidecar
``PAIRS.jsonl.meta.json``: the settings that made it (:func:`stage_settings`: step-pair config,
seed, a digest of the records and of the critic, which backend sampled the candidates), its
shard, and its counts. While the stage runs, every finished agent turn is appended (flushed and
fsync'd) to ``PAIRS.jsonl.turns.jsonl``, the journal: ``--resume`` reads it back, checks that
the settings match and samples only the turns it lacks (and those that failed). When every turn
of the shard was attempted, the pairs are written atomically in turn order, the meta beside
them, and the journal is removed (kept while some turn failed, so ``--resume`` retries those).

``--shard I/N`` builds the turns ``k`` with ``k % N == I`` of the one global turn list (the
turns of every record, then ``turn_fraction`` sampled with the run's seed), each with the seed
it has in an unsharded run, so ``sweet-agent merge-pairs`` of the N shards is the unsharded
file. The merge refuses shards built with different settings, shards of different ``N``, and a
missing or repeated shard, each with a one-line error.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from colbench_gym.jsonl import Journal, JournalDamaged, read_journal, write_jsonl_atomic, write_text_atomic

#: Written into every meta and journal header; a reader refuses other formats.
FORMAT = "sweet-agent step pairs v1"
META_SUFFIX = ".meta.json"
JOURNAL_SUFFIX = ".turns.jsonl"
#: Counts a turn contributes (journal entries) and a file sums (meta ``counts``).
COUNT_KEYS = ("turns", "candidates", "question_candidates", "truncated_candidates", "turns_without_pair",
              "failed_turns", "pairs", "completion_tokens")


class PairFileError(ValueError):
    """A step-pair file, journal or merge that cannot be used as asked (one line, what to do)."""


def meta_path(pairs: str | os.PathLike[str]) -> Path:
    return Path(str(pairs) + META_SUFFIX)


def journal_path(pairs: str | os.PathLike[str]) -> Path:
    return Path(str(pairs) + JOURNAL_SUFFIX)


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count``: the turns ``k`` with ``k % count == index``."""

    index: int = 0
    count: int = 1

    @classmethod
    def parse(cls, text: str | None) -> Shard:
        """``"I/N"`` (``0 <= I < N``); ``None`` or ``""``: the whole stage (``0/1``)."""
        if not text:
            return cls()
        try:
            i, n = (int(x) for x in str(text).split("/"))
        except ValueError:
            raise PairFileError(f"--shard must be I/N (this process's shard I of N, 0 <= I < N), got {text!r}") from None
        if not (n >= 1 and 0 <= i < n):
            raise PairFileError(f"--shard {text}: need N >= 1 and 0 <= I < N")
        return cls(i, n)

    def owns(self, turn: int) -> bool:
        return turn % self.count == self.index

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"

    def path(self, pairs: str | os.PathLike[str]) -> Path:
        """Where this shard's pairs go when ``pairs`` names the whole stage's file:
        ``step_pairs.jsonl`` -> ``step_pairs.shard-2-of-8.jsonl`` (itself when unsharded)."""
        p = Path(pairs)
        if self.count == 1:
            return p
        return p.with_name(f"{p.stem}.shard-{self.index}-of-{self.count}{p.suffix or '.jsonl'}")


def digest(obj: Any) -> str:
    """sha256 of ``obj`` as canonical JSON (sorted keys): what two runs must share to be merged."""
    h = hashlib.sha256()
    h.update(json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def stage_settings(config: Any, config_fields: Iterable[str], *, seed: int, system_prompt: str | None,
                   records: Sequence[dict[str, Any]], total_turns: int, critic_meta: dict[str, Any],
                   candidates_from: str, critic_fingerprint: str | None = None) -> dict[str, Any]:
    """Everything that decides a turn's pairs, as JSON: two files with equal settings hold the
    same pairs for the same turn (on the local path; a server's samples vary with the server).
    ``critic_fingerprint`` (the critic checkpoint's fingerprint) tells a critic trained again with the
    same settings from the one that scored the file: a journal or shard of the other is refused."""
    return {
        "format": FORMAT,
        "step_pairs": {name: getattr(config, name) for name in config_fields},
        "seed": int(seed),
        "system_prompt": system_prompt,
        "records": {"count": len(records), "sha256": digest(list(records))},
        "total_turns": int(total_turns),
        "critic": {"meta_sha256": digest(critic_meta), "fingerprint": critic_fingerprint},
        "candidates_from": candidates_from,
    }


# ----------------------------------------------------------------------------- shared candidates
#: Written into a candidates file's header; a reader refuses other formats.
CANDIDATES_FORMAT = "sweet-agent step-pair candidates v1"
#: The step-pair settings that decide a turn's candidates (not how they are scored or paired).
SAMPLING_FIELDS = ("num_candidates", "turn_fraction", "first_turns", "skip_turns", "max_new_tokens", "temperature",
                   "top_p", "explore_candidates", "explore_turns")


class CandidateFileError(PairFileError):
    """A candidates file that was not sampled for this stage (one line: what differs, what to do)."""


def candidate_settings(config: Any, *, seed: int, system_prompt: str | None, records: Sequence[dict[str, Any]],
                       total_turns: int, candidates_from: str, policy: dict[str, Any], shard: Shard) -> dict[str, Any]:
    """Everything that decides a turn's candidates: the base policy (``policy``: its identity,
    :func:`~sweet_agent.training.models.model_fingerprint`) and backend, the sampling settings (:data:`SAMPLING_FIELDS`),
    the seed, the records and their turns. The critic is not part of it: every training seed's
    critic may score the same candidates."""
    return {
        "format": CANDIDATES_FORMAT,
        "policy": policy,
        "candidates_from": candidates_from,
        "sampling": {name: getattr(config, name) for name in SAMPLING_FIELDS},
        "seed": int(seed),
        "system_prompt": system_prompt,
        "records": {"count": len(records), "sha256": digest(list(records))},
        "total_turns": int(total_turns),
        "shard": shard.label,
    }


def write_candidate_file(path: str | os.PathLike[str], by_turn: dict[int, list[dict[str, Any]]],
                         settings: dict[str, Any]) -> None:
    """A header line ``{"format", "settings"}``, then one line per turn ``{"turn", "candidates"}``
    (text, finish reason, forced prefix, completion tokens, whether it is a question
    candidate), atomically."""
    rows = [{"format": CANDIDATES_FORMAT, "settings": settings}]
    rows += [{"turn": int(k), "candidates": by_turn[k]} for k in sorted(by_turn)]
    write_jsonl_atomic(path, rows)


def read_candidate_file(path: str | os.PathLike[str], settings: dict[str, Any]) -> dict[int, list[dict[str, Any]]]:
    """The candidates of every turn in ``path``, after checking they were sampled with
    ``settings`` (:func:`candidate_settings`); :class:`CandidateFileError` in one line otherwise."""
    try:
        lines = read_pair_rows(path)
    except (OSError, json.JSONDecodeError) as exc:
        raise CandidateFileError(f"{path} is not a readable candidates file ({type(exc).__name__}); remove it to "
                                 "sample the candidates again") from None
    head = lines[0] if lines else {}
    if head.get("format") != CANDIDATES_FORMAT:
        raise CandidateFileError(f"{path} is not a candidates file of this version ({CANDIDATES_FORMAT!r}); remove it "
                                 "to sample the candidates again")
    diff = differences(head.get("settings", {}), settings)
    if diff:
        raise CandidateFileError(f"{path} holds candidates of another base policy or sampling ({'; '.join(diff[:4])}): "
                                 "candidates are shared only between runs of the same base policy and settings; "
                                 "pass another --candidates_file or remove it")
    return {int(row["turn"]): row["candidates"] for row in lines[1:]}


def differences(a: dict[str, Any], b: dict[str, Any], prefix: str = "") -> list[str]:
    """``"key: A vs B"`` for every setting that differs (nested keys dotted)."""
    out = []
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key), b.get(key)
        if isinstance(va, dict) and isinstance(vb, dict):
            out += differences(va, vb, f"{prefix}{key}.")
        elif va != vb:
            out.append(f"{prefix}{key}: {_short(va)} vs {_short(vb)}")
    return out


def pair_settings_differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """:func:`differences` of two step-pair stages' settings. A side written before the critic's
    fingerprint was recorded (no ``critic.fingerprint`` key) is compared without it: which critic
    scored it is unknown, not different, so an older journal or shard still resumes and merges."""
    co, cn = old.get("critic") or {}, new.get("critic") or {}
    if isinstance(co, dict) and isinstance(cn, dict) and ("fingerprint" in co) != ("fingerprint" in cn):
        old = {**old, "critic": {k: v for k, v in co.items() if k != "fingerprint"}}
        new = {**new, "critic": {k: v for k, v in cn.items() if k != "fingerprint"}}
    return differences(old, new)


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


# ----------------------------------------------------------------------------- the journal
class SettingsJournal:
    """The append-only record of a stage's finished turns (one JSON line each, fsync'd), after a
    header holding the stage's ``format`` and ``settings``: the one resume logic of the actor's
    journaled stages (step pairs here, ``mc-values``).

    Opened with ``resume=False`` it starts afresh (an older journal is replaced); with
    ``resume=True`` it keeps the turns an earlier run finished, after checking that run's format,
    its header keys in ``same`` (each with the advice its one-line error gives) and its settings
    (``differences``): any mismatch is one ``error`` line naming it. A torn last line (the process
    was killed while writing it) is dropped, a damaged middle refused; a turn whose last entry is
    an error is not done, so it runs again."""

    def __init__(self, path: str | os.PathLike[str], header: dict[str, Any], resume: bool, *, kind: str,
                 error: type[Exception], same: Sequence[tuple[str, str]] = (),
                 differences: Callable[[dict[str, Any], dict[str, Any]], list[str]] = differences):
        self.path, self.header = Path(path), header
        self.done: dict[int, dict[str, Any]] = {}
        if resume and self.path.exists():
            self._read_back(kind, error, same, differences)
            self._journal = Journal(self.path)
        else:
            self._journal = Journal(self.path, header=header)

    def _read_back(self, kind, error, same, settings_differences) -> None:
        try:
            lines = read_journal(self.path)
        except JournalDamaged as exc:
            raise error(f"--resume: {exc}") from None
        if not lines or not isinstance(lines[0], dict) or lines[0].get("format") != self.header["format"]:
            raise error(f"--resume: {self.path} is not {kind} journal of this version; remove it or "
                        "rerun without --resume")
        old = lines[0]
        for key, advice in same:
            if old.get(key) != self.header.get(key):
                raise error(f"--resume: {self.path} holds {key} {old.get(key)}, not {self.header.get(key)}; {advice}")
        diff = settings_differences(old.get("settings", {}), self.header["settings"])
        if diff:
            raise error(f"--resume: {self.path} was built with other settings ({'; '.join(diff[:4])}); "
                        "restore them, or rerun without --resume to start over")
        for entry in lines[1:]:
            self._note(entry)

    def _note(self, entry: dict[str, Any]) -> None:
        if entry.get("error") is None:
            self.done[int(entry["turn"])] = entry
        else:
            self.done.pop(int(entry["turn"]), None)  # a failed turn runs again

    def append(self, entry: dict[str, Any]) -> None:
        self._journal.append(entry)
        self._note(entry)

    def close(self) -> None:
        self._journal.close()


class TurnJournal(SettingsJournal):
    """A step-pair shard's journal: its header also names the shard, and a resume must be the
    same shard with the same settings (:class:`PairFileError` otherwise)."""

    def __init__(self, path: str | os.PathLike[str], settings: dict[str, Any], shard: Shard, resume: bool):
        super().__init__(path, {"format": FORMAT, "settings": settings, "shard": shard.label}, resume,
                         kind="a step-pair", error=PairFileError,
                         same=[("shard", "pass the same --shard or rerun without --resume")],
                         differences=pair_settings_differences)


def sum_counts(entries: Iterable[dict[str, Any]]) -> dict[str, int]:
    counts = dict.fromkeys(COUNT_KEYS, 0)
    for e in entries:
        for key in COUNT_KEYS:
            counts[key] += int(e.get("counts", {}).get(key, 0))
    return counts


def write_pair_file(path: str | os.PathLike[str], rows: Sequence[dict[str, Any]], meta: dict[str, Any]) -> None:
    """The pairs (atomically), then their meta (atomically): a meta never describes other rows."""
    write_jsonl_atomic(path, rows)
    write_text_atomic(meta_path(path), json.dumps(meta, indent=2, ensure_ascii=False) + "\n")


def read_pair_meta(path: str | os.PathLike[str]) -> dict[str, Any]:
    mp = meta_path(path)
    if not mp.is_file():
        raise PairFileError(f"{path} has no {mp.name}: it was not written by `sweet-agent train-actor` with "
                            "--shard/--pairs_out (or its meta was removed); rebuild it")
    try:
        meta = json.loads(mp.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise PairFileError(f"{mp} is not readable JSON ({exc}); rebuild {path}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise PairFileError(f"{mp} is not a step-pair meta of this version ({FORMAT!r}); rebuild {path}")
    return meta


def read_pair_rows(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


# ----------------------------------------------------------------------------- merging
def merge_pair_files(paths: Sequence[str | os.PathLike[str]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``(rows, meta)`` of the shards at ``paths`` merged: rows in turn order, as one unsharded
    run writes them. Refuses (:class:`PairFileError`, one line) shards whose settings differ,
    of different shard counts, or that do not cover ``0..N-1`` exactly once."""
    if not paths:
        raise PairFileError("merge-pairs: name the shard files to merge")
    metas = [(Path(p), read_pair_meta(p)) for p in paths]
    first_path, first = metas[0]
    for path, meta in metas[1:]:
        diff = pair_settings_differences(first["settings"], meta["settings"])
        if diff:
            raise PairFileError(f"cannot merge {first_path} and {path}: built with different settings "
                                f"({'; '.join(diff[:4])})")
    shards = [Shard.parse(m.get("shard")) for _, m in metas]
    counts = {s.count for s in shards}
    if len(counts) != 1:
        raise PairFileError("cannot merge shards of different counts: "
                            + ", ".join(f"{p} is {s.label}" for (p, _), s in zip(metas, shards)))
    n = counts.pop()
    seen: dict[int, Path] = {}
    for (path, _), s in zip(metas, shards):
        if s.index in seen:
            raise PairFileError(f"cannot merge: {seen[s.index]} and {path} are both shard {s.label}")
        seen[s.index] = path
    missing = [f"{i}/{n}" for i in range(n) if i not in seen]
    if missing:
        raise PairFileError(f"cannot merge: shard(s) {', '.join(missing)} missing (got {len(seen)} of {n})")
    rows: list[tuple[int, int, dict[str, Any]]] = []
    for path, _ in metas:
        for j, row in enumerate(read_pair_rows(path)):
            rows.append((int(row.get("turn", -1)), j, row))
    rows.sort(key=lambda x: (x[0], x[1]))
    total = dict.fromkeys(COUNT_KEYS, 0)
    failed: list[int] = []
    for _, m in metas:
        for key in COUNT_KEYS:
            total[key] += int(m.get("counts", {}).get(key, 0))
        failed += m.get("failed_turns", [])
    meta = {"format": FORMAT, "settings": first["settings"], "shard": "0/1", "counts": total,
            "failed_turns": sorted(failed), "candidates": first.get("candidates"),
            "merged_from": [str(p) for p, _ in metas]}
    return [r for _, _, r in rows], meta


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shards", nargs="+", help="step-pair files of `train-actor --shard I/N` (each with its "
                                                  ".meta.json)")
    parser.add_argument("--output", "-o", required=True, help="merged step-pair file to write (with its .meta.json)")


def run(args: argparse.Namespace) -> int:
    """``sweet-agent merge-pairs SHARD... -o OUT``."""
    try:  # shards refused before any work: exit 2 (CONTRIBUTING, "Errors and exit statuses")
        rows, meta = merge_pair_files(args.shards)
    except (ValueError, OSError) as exc:
        raise SystemExit(str(exc)) from None
    write_pair_file(args.output, rows, meta)
    c = meta["counts"]
    print(f"[merge-pairs] {len(rows)} step pairs from {c['turns']} agent turns in {len(args.shards)} shards "
          f"(candidates from {meta['settings']['candidates_from']}) -> {args.output}")
    if meta["failed_turns"]:
        print(f"[merge-pairs] warning: {len(meta['failed_turns'])} turns failed in the shards and have no pairs; "
              "rerun their shards with --resume to retry them, then merge again")
    return 0
