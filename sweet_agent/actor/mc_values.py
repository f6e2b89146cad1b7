"""Monte-Carlo step values: a ground truth for step-level credit that needs no critic.

SWEET-RL's actor learns from the critic's preference between candidate turns. Whether those
preferences are right can be measured without any critic: for a candidate turn (an offline
trajectory's prefix + a candidate agent message), play the episode to its end ``k`` times with
the behaviour policy against the same simulator and grade each ending. The mean graded reward
is a Monte-Carlo estimate of Q^π(o_t, a): how good the turn is when the policy carries on.

- **Same simulator state.** The environment is reset with the trajectory's task and its
  ``meta.env_seed`` (the seed the rollout collector reset it with), and the prefix's recorded
  agent turns are replayed through ``env.step``, so the simulated person is where it was when
  the trajectory was played. The person's replies of the replay are compared with the
  recorded ones (``replay_mismatches``: 0 for the offline simulator; an LLM person sampled
  again may differ, and then the completions continue from what it said this time).
- **Answers are graded directly.** A candidate that ends the episode (it writes
  ``I WANT TO ANSWER:``, or it is the last allowed turn) is stepped once and its value is its
  graded reward: no rollouts, no noise.
- **Identical candidate texts share one estimate** (their rollouts would estimate the same Q).
- **Failures.** A completion that fails for infrastructure reasons (simulator, endpoint,
  grader: :mod:`colbench_gym.tasks.accounting`) is left out of the mean and counted; one the
  policy itself fails (``agent_error``) scores 0, as in the rollouts. A candidate whose every
  completion failed has ``mc_value`` null and takes part in no pair.

Rewards are the env's ``reward_mode`` (default ``"fraction"``: the share of hidden tests passed,
the protocol's % tests passed). Candidates are sampled like ``train-actor``'s (``stage_turns``
chooses the turns, turn ``k``'s candidates are seeded ``seed + k``, ``--explore_candidates``
adds question openers at any agent turn), so a values file built with ``train-actor``'s
settings and seed holds the same turns as its step pairs.

The stage (``sweet-agent mc-values``) writes one JSON line per agent turn (:func:`build_mc_values`)
and a ``.meta.json`` sidecar with its settings and counts. Every finished turn is appended
(fsync'd) to a journal beside the output; ``--resume`` continues from it (same settings, else a
one-line error); the output is written atomically once every turn is done and the journal is
then removed (kept while a turn failed, so ``--resume`` retries it).

The values feed ``sweet-agent critic-report`` (:mod:`sweet_agent.actor.critic_report`: how often
a critic orders two candidates as their Monte-Carlo values do) and ``train-actor
--pair_labels monte-carlo`` (:func:`monte_carlo_pairs`: step pairs labelled by the values
themselves, the oracle-credit actor).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from colbench_gym.jsonl import check_output_writable, write_jsonl_atomic, write_text_atomic
from colbench_gym.protocol import Messages, parse_action
from colbench_gym.spaces import encodable_data
from colbench_gym.tasks.accounting import end_reason_of, is_infrastructure
from sweet_agent.actor.pair_files import FORMAT as PAIRS_FORMAT
from sweet_agent.actor.pair_files import SettingsJournal, differences, digest, write_pair_file
from sweet_agent.policies.base import Policy, PolicyError, SamplingParams, derive_seed
from sweet_agent.training_data import records as R

PROG = "sweet-agent mc-values"
#: Written into every values meta and journal header; readers refuse other formats.
FORMAT = "sweet-agent mc step values v1"
META_SUFFIX = ".meta.json"
JOURNAL_SUFFIX = ".turns.jsonl"
#: A failed simulator reply is retried this many times (with backoff) before the completion fails.
SIMULATOR_RETRIES = 2
#: Two Monte-Carlo values closer than this are a tie (no preference to agree with).
MC_TIE = 1e-9


class MCValuesError(ValueError):
    """A values file or journal that cannot be used as asked (one line: what, and what to do)."""


@dataclass
class MCConfig:
    """What :func:`build_mc_values` samples and plays (every field is an ``mc-values`` flag)."""

    num_candidates: int = 8
    rollouts_per_candidate: int = 4
    explore_candidates: float = 0.0
    turn_fraction: float = 1.0
    first_turns: int = 0
    skip_turns: int = 0
    max_new_tokens: int = 256
    temperature: float = 1.0
    top_p: float = 1.0
    rollout_temperature: float | None = None  # the completions' (default: temperature)
    rollout_max_new_tokens: int | None = None  # the completions' (default: max_new_tokens)
    env_id: str = "ColBench-Backend-v0"
    simulator: Any = "offline"
    simulator_kwargs: dict[str, Any] | None = None
    max_turns: int | None = None  # None: the records' meta.max_turns (one value), else 10
    reward_mode: str = "fraction"
    concurrency: int = 8

    def __post_init__(self) -> None:
        if self.num_candidates < 1:
            raise ValueError(f"num_candidates must be >= 1, got {self.num_candidates}")
        if self.rollouts_per_candidate < 1:
            raise ValueError(f"rollouts_per_candidate must be >= 1, got {self.rollouts_per_candidate}")
        if not 0 <= self.explore_candidates <= 1:
            raise ValueError(f"explore_candidates must be in [0, 1], got {self.explore_candidates}")
        if not 0 < self.turn_fraction <= 1:
            raise ValueError(f"turn_fraction must be in (0, 1], got {self.turn_fraction}")
        if self.first_turns < 0 or self.skip_turns < 0:
            raise ValueError("first_turns and skip_turns must be >= 0")
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency}")
        if self.reward_mode not in ("fraction", "success"):
            raise ValueError(f"reward_mode must be fraction or success, got {self.reward_mode!r}")
        if self.max_turns is not None and self.max_turns < 1:
            raise ValueError(f"max_turns must be >= 1, got {self.max_turns}")

    def candidate_sampling(self) -> SamplingParams:
        return SamplingParams(max_new_tokens=self.max_new_tokens, temperature=self.temperature, top_p=self.top_p,
                              top_k=0)

    def rollout_sampling(self) -> SamplingParams:
        temp = self.temperature if self.rollout_temperature is None else self.rollout_temperature
        return SamplingParams(max_new_tokens=self.rollout_max_new_tokens or self.max_new_tokens, temperature=temp,
                              top_p=self.top_p, top_k=0)

    def settings(self) -> dict[str, Any]:
        out = asdict(self)
        if not isinstance(self.simulator, str):  # an instance (tests, scripts): its class names it
            out["simulator"] = type(self.simulator).__name__
        return out


def meta_path(values: str | os.PathLike[str]) -> Path:
    return Path(str(values) + META_SUFFIX)


def journal_path(values: str | os.PathLike[str]) -> Path:
    return Path(str(values) + JOURNAL_SUFFIX)


# ----------------------------------------------------------------------------- the environment
def make_env(config: MCConfig, max_turns: int):
    import gymnasium as gym

    import colbench_gym  # noqa: F401 - registers the environments
    from colbench_gym.tasks.kinds import kind_of_env_id

    # the kind's own reward settings (the kinds table): backend's reward_mode, none for frontend
    extra = {"reward_mode": config.reward_mode} if "reward_mode" in kind_of_env_id(config.env_id).reward_options else {}
    return gym.make(config.env_id, simulator=config.simulator, simulator_kwargs=config.simulator_kwargs,
                    max_turns=max_turns, **extra)


def recorded_turns(rec: dict[str, Any]) -> list[tuple[str, str | None]]:
    """``(agent output, the person's reply after it or None)`` per agent turn of a record."""
    msgs = R.dialogue_messages(rec)
    out = []
    for i, m in enumerate(msgs):
        if m["role"] == "assistant":
            nxt = msgs[i + 1] if i + 1 < len(msgs) and msgs[i + 1]["role"] == "user" else None
            out.append((m["content"], None if nxt is None else nxt["content"]))
    return out


def env_seed_of(rec: dict[str, Any], seed: int, record_index: int) -> int:
    """The seed the record's episode was reset with (``meta.env_seed``), else one derived from
    the run's seed and the record (the person's replies are then compared, not assumed)."""
    meta = rec.get("meta")
    if isinstance(meta, dict) and isinstance(meta.get("env_seed"), int) and not isinstance(meta["env_seed"], bool):
        return int(meta["env_seed"])
    return derive_seed(seed, "mc-env", record_index)


def rollout_seed(seed: int, turn: int, candidate: int, rollout: int, step: int) -> int:
    """The policy's seed at completion step ``step`` of rollout ``rollout`` of candidate
    ``candidate`` (its first index among the turn's candidates) of stage turn ``turn``: fixed
    by these numbers, whatever else shares the batch."""
    return derive_seed(seed, "mc-rollout", turn, candidate, rollout, step)


class _Completion:
    """One episode played from a turn's prefix: replay, the candidate, then the policy to the end."""

    def __init__(self, env, system: str | None, seeds: tuple[int, int, int, int]):
        self.env, self.system, self.seeds = env, system, seeds
        self.messages: Messages = []
        self.steps = 0  # policy turns after the candidate
        self.done = False
        self.reward: float | None = None
        self.end_reason = ""
        self.error = ""
        self.mismatches = 0

    def start(self, task: dict[str, Any], env_seed: int, prefix: Sequence[tuple[str, str | None]],
              candidate: str) -> None:
        """Reset with the task and seed, replay the recorded prefix (counting person replies that
        differ from the recorded ones), then step the candidate."""
        try:
            _, info = self.env.reset(seed=env_seed, options={"task": task})
            self.messages = info["messages"]
            for output, reply in prefix:
                if self._step(output):
                    raise MCValuesError("the replayed prefix ended the episode before the candidate's turn")
                if reply is not None and self.messages[-1]["content"] != reply:
                    self.mismatches += 1
            self._step(candidate)
        except Exception as exc:  # noqa: BLE001 - this completion fails, the others go on
            self.fail(exc, "environment_error")

    def prompt(self) -> Messages:
        sys_msg = [{"role": "system", "content": self.system}] if self.system else []
        return encodable_data([*sys_msg, *({"role": m["role"], "content": m["content"]} for m in self.messages)])

    def seed(self) -> int:
        turn, cand, r = self.seeds[1:]
        return rollout_seed(self.seeds[0], turn, cand, r, self.steps)

    def act(self, text: str) -> None:
        self.steps += 1
        try:
            self._step(text)
        except Exception as exc:  # noqa: BLE001
            self.fail(exc, "environment_error")

    def _step(self, action: str) -> bool:
        from colbench_gym.simulators import SimulatorError
        from colbench_gym.simulators.openai_resilience import backoff

        for attempt in range(SIMULATOR_RETRIES + 1):
            try:
                _, reward, terminated, truncated, info = self.env.step(action)
                break
            except SimulatorError:
                if attempt >= SIMULATOR_RETRIES:
                    raise
                time.sleep(backoff(attempt))
        self.messages = info["messages"]
        if terminated or truncated:
            self.done = True
            self.end_reason = str(info.get("end_reason") or info.get("ended_by") or "")
            self.reward = None if is_infrastructure(self.end_reason) else float(reward)
            if self.reward is None:
                self.error = f"{self.end_reason}: {info.get('grade_error') or ''}".rstrip(": ")[:500]
        return self.done

    def fail(self, exc: BaseException, default_reason: str) -> None:
        self.done = True
        self.end_reason = end_reason_of(exc, default_reason)
        self.error = f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:500]
        self.reward = None if is_infrastructure(self.end_reason) else 0.0


def _play(completions: list[_Completion], policy: Policy, sampling: SamplingParams, pool) -> None:
    """Step every completion to its end: each round, the next turn of all unfinished ones in one
    :meth:`Policy.generate` call, then their environments step in ``pool``."""
    while True:
        active = [c for c in completions if not c.done]
        if not active:
            return
        try:
            gens = policy.generate([c.prompt() for c in active], sampling, [c.seed() for c in active])
        except Exception as exc:  # noqa: BLE001 - the batch's completions fail, the stage goes on
            for c in active:
                c.fail(exc, "agent_error")
            continue
        list(pool.map(lambda c, g: c.act(g.text), active, gens))


# ----------------------------------------------------------------------------- one turn
def estimate_turn(policy: Policy, envs: list[Any], pool, rec: dict[str, Any], n_prefix: int,
                  candidates: Sequence[str], config: MCConfig, *, seed: int, turn: int, env_seed: int,
                  system: str | None, max_turns: int, first_rollout: int = 0,
                  play_terminal: bool = True) -> tuple[list[dict[str, Any]], int]:
    """The Monte-Carlo value of each candidate as agent turn ``n_prefix + 1`` of ``rec``, in
    order: ``([{"mc_value", "rewards", "terminal", "rollouts", "failed_rollouts", "end_reasons",
    "completion_turns"}], replay mismatches)``. A candidate that ends the episode (an answer, or
    the last allowed turn: ``terminal``) is played once and graded; any other is played
    ``config.rollouts_per_candidate`` times to the end by ``policy``. At most ``len(envs)``
    completions are played at a time (one policy batch). Rollouts are numbered from
    ``first_rollout`` (their seeds follow the number: ``--extend`` plays new draws after a values
    file's own); ``play_terminal=False`` leaves the candidates that end the episode unplayed (their
    value is already known)."""
    prefix = recorded_turns(rec)[:n_prefix]
    task = rec["task"]
    first: dict[str, int] = {}
    for j, text in enumerate(candidates):
        first.setdefault(text, j)
    terminal = {t: parse_action(t).is_answer or n_prefix + 1 >= max_turns for t in first}
    k = config.rollouts_per_candidate
    jobs = [(t, r) for t in first
            for r in ((range(1) if play_terminal else range(0)) if terminal[t] else range(first_rollout, first_rollout + k))]
    sampling = config.rollout_sampling()
    played: dict[str, list[_Completion]] = {t: [] for t in first}
    mismatches = 0
    for start in range(0, len(jobs), len(envs)):
        batch = jobs[start:start + len(envs)]
        comps = [_Completion(env, system, (seed, turn, first[t], r)) for env, (t, r) in zip(envs, batch)]
        list(pool.map(lambda c, job: c.start(task, env_seed, prefix, job[0]), comps, batch))
        _play(comps, policy, sampling, pool)
        for (t, _), c in zip(batch, comps):
            played[t].append(c)
            mismatches = max(mismatches, c.mismatches)
    results = {}
    for t, comps in played.items():
        rewards = [c.reward for c in comps if c.reward is not None]
        errors = [c.error for c in comps if c.error]
        results[t] = {
            "mc_value": sum(rewards) / len(rewards) if rewards else None,
            "rewards": rewards,
            "terminal": terminal[t],
            "rollouts": 0 if terminal[t] else len(comps),
            "failed_rollouts": sum(c.reward is None for c in comps),
            "end_reasons": [c.end_reason for c in comps],
            "completion_turns": [c.steps for c in comps],
            **({"errors": errors[:3]} if errors else {}),
        }
    return [dict(results[t]) for t in candidates], mismatches


# ----------------------------------------------------------------------------- the stage
def stage_settings(config: MCConfig, *, seed: int, system_prompt: str | None, records: Sequence[dict[str, Any]],
                   total_turns: int, policy_name: str, max_turns: int) -> dict[str, Any]:
    return {"format": FORMAT, "mc": config.settings(), "seed": int(seed), "system_prompt": system_prompt,
            "records": {"count": len(records), "sha256": digest(list(records))}, "total_turns": int(total_turns),
            "policy": policy_name, "max_turns": int(max_turns)}


def records_max_turns(records: Sequence[dict[str, Any]], asked: int | None) -> int:
    """The episodes' turn limit: ``asked``, else the records' ``meta.max_turns`` (one value), else 10."""
    if asked is not None:
        return int(asked)
    seen = {int(r["meta"]["max_turns"]) for r in records
            if isinstance(r.get("meta"), dict) and isinstance(r["meta"].get("max_turns"), int)}
    if len(seen) > 1:
        raise MCValuesError(f"the records were played with different turn limits ({sorted(seen)}); give --max_turns, "
                            "or split the data by turn limit")
    return seen.pop() if seen else 10


def build_mc_values(records: Sequence[dict[str, Any]], policy: Policy, config: MCConfig, *, seed: int = 0,
                    system_prompt: str | None = None, output: str | os.PathLike[str] | None = None,
                    resume: bool = False, progress: bool = False, stats: dict[str, Any] | None = None,
                    question_policy: Policy | None = None,
                    extend: tuple[Sequence[dict[str, Any]], dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """One row per selected agent turn of ``records`` (``stage_turns``, as ``train-actor``):
    ``{"turn", "record_index", "task_key", "agent_turn", "turn_index", "prompt", "task",
    "env_seed", "replay_mismatches", "candidates": [{"text", "question", "answer",
    "mc_value", "rewards", ...}], "error"}``. ``policy`` samples the candidates and plays the
    completions (the behaviour policy); ``question_policy`` (default ``policy``) completes the
    question openers of ``config.explore_candidates`` (it must continue a forced start: a local
    model). With ``output``, journaled and resumable (see the module's docstring).

    ``extend=(rows, meta)``, a finished values file of the same settings (but its ``k``): its
    turns and candidates are kept, every candidate that goes on is played ``config.rollouts_per_candidate``
    more times (rollout numbers, hence seeds, continue after the file's), and each value pools the
    file's rewards and the new ones. WHY: more completions of the very candidates a critic report
    already scored (its scores journal is reused), and two independent draws per candidate to
    measure how noisy a one-completion label is (``critic-report``'s label reliability)."""
    from sweet_agent.actor.candidates import stage_turns
    from sweet_agent.policies.exploration import ExplorationConfig
    from sweet_agent.sweet_rl.algorithm import question_count, turn_candidates

    max_turns = records_max_turns(records, config.max_turns)
    turns = stage_turns(records, config, seed, system_prompt)
    settings = stage_settings(config, seed=seed, system_prompt=system_prompt, records=records,
                              total_turns=len(turns), policy_name=policy.name, max_turns=max_turns)
    n_questions = question_count(config.num_candidates, config.explore_candidates)
    qpolicy = question_policy or policy
    source, first_rollout = None, 0
    if extend is not None:
        source, first_rollout, settings = extended_settings(extend, settings, turns)
    elif n_questions and not getattr(qpolicy, "supports_prefix", False):
        raise MCValuesError(f"--explore_candidates: question candidates are completed by a local model; {qpolicy.name} "
                            "cannot continue a forced start of a turn")
    if resume and output is not None and not journal_path(output).exists() and Path(output).is_file():
        rows, meta = read_values_file(output)  # a finished stage: nothing to play again
        diff = differences(meta.get("settings", {}), settings)
        if diff:
            raise MCValuesError(f"--resume: {output} was built with other settings ({'; '.join(diff[:4])}); restore "
                                "them, or rerun without --resume to start over")
        if stats is not None:
            stats.update(meta.get("counts", {}), failed=[], resumed_turns=len(rows), wall_seconds=0.0)
        return rows
    journal = values_journal(journal_path(output), settings, resume) if output is not None else None
    entries: dict[int, dict[str, Any]] = dict(journal.done) if journal is not None else {}
    todo = [k for k in range(len(turns)) if k not in entries]
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(turns), initial=len(turns) - len(todo), desc=f"mc values ({policy.name})", unit="turn",
                   dynamic_ncols=True)
    say = bar.write if bar is not None else print
    envs = [make_env(config, max_turns) for _ in range(config.concurrency)]
    failed: list[tuple[int, str]] = []
    t0 = time.perf_counter()
    try:
        with ThreadPoolExecutor(max_workers=len(envs), thread_name_prefix="mc-env") as pool:
            for k in todo:
                ri, ti, conv = turns[k]
                rec = records[ri]
                n_prefix = sum(1 for m in R.dialogue_messages(rec)[:ti] if m["role"] == "assistant")
                agent_turn = n_prefix + 1
                row = {"turn": k, "record_index": ri, "task_key": R.task_key(rec), "agent_turn": agent_turn,
                       "turn_index": ti, "prompt": conv, "task": rec["task"],
                       "env_seed": env_seed_of(rec, seed, ri), "error": None}
                if source is not None:
                    before = source[k]["candidates"]
                    values, mismatches = estimate_turn(policy, envs, pool, rec, n_prefix, [c["text"] for c in before],
                                                       config, seed=seed, turn=k, env_seed=row["env_seed"],
                                                       system=_system_of(conv), max_turns=max_turns,
                                                       first_rollout=first_rollout, play_terminal=False)
                    row["replay_mismatches"] = max(mismatches, int(source[k].get("replay_mismatches", 0)))
                    row["candidates"] = [old if old.get("terminal") else pooled_value(old, new)
                                         for old, new in zip(before, values)]
                    entries[k] = row
                else:
                    try:
                        exploration = ExplorationConfig(rate=1.0, turns=agent_turn)  # this turn is eligible
                        gens = turn_candidates(policy, conv, config.num_candidates, config.candidate_sampling(), seed + k,
                                               questions=n_questions, exploration=exploration, question_policy=qpolicy)
                    except PolicyError as exc:
                        row["error"] = " ".join(str(exc).split())[:500]
                        failed.append((k, row["error"]))
                        say(f"[mc-values] turn {k} (agent turn {agent_turn}) failed: sampling its candidates: {row['error']}")
                    else:
                        texts = [g.text for g in gens]
                        values, mismatches = estimate_turn(policy, envs, pool, rec, n_prefix, texts, config, seed=seed,
                                                           turn=k, env_seed=row["env_seed"], system=_system_of(conv),
                                                           max_turns=max_turns)
                        row["replay_mismatches"] = mismatches
                        row["candidates"] = [
                            {"text": t, "question": j >= len(gens) - n_questions, "answer": parse_action(t).is_answer,
                             "finish_reason": g.finish_reason, **v}
                            for j, (t, g, v) in enumerate(zip(texts, gens, values))]
                        entries[k] = row
                if journal is not None:
                    journal.append(row)
                if bar is not None:
                    bar.update(1)
    finally:
        for env in envs:
            env.close()
        if bar is not None:
            bar.close()
        if journal is not None:
            journal.close()
    rows = [entries[k] for k in range(len(turns)) if k in entries]
    counts = count_rows(rows)
    counts.update(turns=len(turns), failed_turns=len(failed))
    if output is not None and not failed:
        write_values_file(output, rows, {"format": FORMAT, "settings": settings, "counts": counts})
        journal_path(output).unlink(missing_ok=True)
    if stats is not None:
        stats.update(counts, failed=failed, resumed_turns=len(turns) - len(todo),
                     wall_seconds=time.perf_counter() - t0)
    return rows


def extended_settings(extend: tuple[Sequence[dict[str, Any]], dict[str, Any]], settings: dict[str, Any],
                      turns: Sequence[tuple[int, int, Any]]) -> tuple[dict[int, dict[str, Any]], int, dict[str, Any]]:
    """For ``build_mc_values(extend=...)``: the source's rows by turn, its ``k`` (where the new
    rollouts' numbers start) and the pooled file's settings (``k`` the sum, ``extends`` naming
    the source's rows). The source must hold these settings but ``k``, and these turns, each
    finished: else one :class:`MCValuesError` line."""
    rows, meta = extend
    old = meta.get("settings", {})
    k_before = int(old.get("mc", {}).get("rollouts_per_candidate", 0))
    if k_before < 1:
        raise MCValuesError("--extend: its meta names no rollouts_per_candidate; rebuild it with `sweet-agent mc-values`")
    # k aside, and how many completions ran at once (seeds are fixed per completion, so it changes no value); a
    # file extended before extends again (its own ``extends`` is kept under the new one)
    mine = {**settings, "mc": {**settings["mc"], "rollouts_per_candidate": k_before,
                               "concurrency": old.get("mc", {}).get("concurrency")}}
    diff = differences({k: v for k, v in old.items() if k != "extends"}, mine)
    if diff:
        raise MCValuesError(f"--extend: it was built with other settings ({'; '.join(diff[:4])}); pass its settings "
                            "(only --rollouts_per_candidate may differ: the completions to add)")
    by_turn = {int(r["turn"]): r for r in rows}
    for k, (ri, ti, _) in enumerate(turns):
        r = by_turn.get(k)
        if r is None or r.get("error") is not None or "candidates" not in r:
            raise MCValuesError(f"--extend: turn {k} is missing or failed in it; finish it with `--resume` first")
        if (int(r["record_index"]), int(r["turn_index"])) != (ri, ti):
            raise MCValuesError(f"--extend: its turn {k} is another dialogue position than these records' "
                                "(other --data or turn selection)")
    k_new = int(settings["mc"]["rollouts_per_candidate"])
    pooled = {**settings, "mc": {**settings["mc"], "rollouts_per_candidate": k_before + k_new},
              "extends": {"rollouts_before": k_before, "rollouts_added": k_new, "rows_sha256": digest(list(rows)),
                          **({"earlier": old["extends"]} if "extends" in old else {})}}
    return by_turn, k_before, pooled


def pooled_value(before: dict[str, Any], added: dict[str, Any]) -> dict[str, Any]:
    """A going-on candidate's value over its earlier completions and the added ones, in that
    order (``end_reasons`` keeps every completion, so :func:`completion_rewards` finds each draw)."""
    rewards = [*before.get("rewards", []), *added["rewards"]]
    out = dict(before)
    out.update(mc_value=sum(rewards) / len(rewards) if rewards else None, rewards=rewards,
               rollouts=int(before.get("rollouts", 0)) + added["rollouts"],
               failed_rollouts=int(before.get("failed_rollouts", 0)) + added["failed_rollouts"],
               end_reasons=[*before.get("end_reasons", []), *added["end_reasons"]],
               completion_turns=[*before.get("completion_turns", []), *added["completion_turns"]])
    errors = [*before.get("errors", []), *added.get("errors", [])]
    if errors:
        out["errors"] = errors[:3]
    return out


def completion_rewards(c: dict[str, Any]) -> list[float | None]:
    """A going-on candidate's rewards in completion order, None where a completion failed for
    infrastructure reasons (``rewards`` leaves those out; ``end_reasons`` keeps every completion)."""
    rewards = iter(c.get("rewards") or [])
    reasons = c.get("end_reasons") or [""] * len(c.get("rewards") or [])
    return [None if is_infrastructure(r) else next(rewards, None) for r in reasons]


def _system_of(conv: Messages) -> str | None:
    return conv[0]["content"] if conv and conv[0].get("role") == "system" else None


def count_rows(rows: Sequence[dict[str, Any]]) -> dict[str, int]:
    cands = [c for r in rows for c in r.get("candidates", [])]
    return {"candidates": len(cands), "answer_candidates": sum(bool(c.get("terminal")) for c in cands),
            "question_candidates": sum(bool(c.get("question")) for c in cands),
            "rollouts": sum(int(c.get("rollouts", 0)) for c in cands),
            "failed_rollouts": sum(int(c.get("failed_rollouts", 0)) for c in cands),
            "unmeasured_candidates": sum(c.get("mc_value") is None for c in cands),
            "replay_mismatches": sum(int(r.get("replay_mismatches", 0)) for r in rows)}


def values_journal(path: Path, settings: dict[str, Any], resume: bool) -> SettingsJournal:
    """The stage's journal of finished turns (``resume``: an earlier run's, same settings)."""
    return SettingsJournal(path, {"format": FORMAT, "settings": settings}, resume, kind="an mc-values",
                           error=MCValuesError)


def write_values_file(path: str | os.PathLike[str], rows: Sequence[dict[str, Any]], meta: dict[str, Any]) -> None:
    """The rows (atomically), then their meta (atomically)."""
    write_jsonl_atomic(path, rows)
    write_text_atomic(meta_path(path), json.dumps(meta, indent=2, ensure_ascii=False) + "\n")


def read_values_file(path: str | os.PathLike[str]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``(rows, meta)`` of a finished values file; a missing, unfinished or foreign file is one
    :class:`MCValuesError` line."""
    path = Path(path)
    if not path.is_file():
        hint = " (its stage is unfinished: rerun `sweet-agent mc-values ... --resume`)" if journal_path(path).exists() else ""
        raise MCValuesError(f"{path} not found{hint}; build it with `sweet-agent mc-values`")
    mp = meta_path(path)
    try:
        meta = json.loads(mp.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MCValuesError(f"{path} has no {mp.name}: not written by `sweet-agent mc-values`; rebuild it") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise MCValuesError(f"{mp} is not readable JSON ({exc}); rebuild {path}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise MCValuesError(f"{mp} is not an mc-values meta of this version ({FORMAT!r}); rebuild {path}")
    with open(path, encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    for i, row in enumerate(rows):
        if not isinstance(row.get("candidates"), list) or not isinstance(row.get("prompt"), list):
            raise MCValuesError(f"{path}:{i + 1}: a values row needs 'prompt' and 'candidates'; rebuild {path}")
    return rows, meta


# ----------------------------------------------------------------------------- oracle-credit pairs
def monte_carlo_pairs(rows: Sequence[dict[str, Any]], pairs_per_turn: int = 4, seed: int = 0
                      ) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Step pairs labelled by the Monte-Carlo values themselves (perfect credit, up to the
    estimate's noise): per turn, the candidates with a value are ordered by it, split into a
    top and a bottom half as the critic's pairs are, and ``pairs_per_turn`` distinct pairs
    drawn with chosen from the top half and rejected from the bottom half, the chosen's value
    strictly higher (a tie in value carries no preference) and the texts different.
    Returns ``(DPO rows, counts)``."""
    from sweet_agent.policies.base import derive_seed as _derive

    out: list[dict[str, Any]] = []
    counts = {"turns": len(rows), "turns_without_pair": 0, "pairs": 0}
    for row in rows:
        cands = [c for c in row.get("candidates", []) if c.get("mc_value") is not None]
        order = sorted(range(len(cands)), key=lambda i: (-float(cands[i]["mc_value"]), i))
        half = len(order) // 2
        top, bottom = order[:half], order[half:]
        options = [(c, r) for c in top for r in bottom
                   if float(cands[c]["mc_value"]) - float(cands[r]["mc_value"]) > MC_TIE
                   and cands[c]["text"] != cands[r]["text"]]
        rng = random.Random(_derive(seed, "mc-pairs", row.get("turn", 0)))
        chosen = rng.sample(options, min(pairs_per_turn, len(options)))
        counts["turns_without_pair"] += not chosen
        for c, r in chosen:
            out.append({"prompt": row["prompt"], "chosen": [{"role": "assistant", "content": cands[c]["text"]}],
                        "rejected": [{"role": "assistant", "content": cands[r]["text"]}],
                        "chosen_score": float(cands[c]["mc_value"]), "rejected_score": float(cands[r]["mc_value"]),
                        "task_key": row.get("task_key"), "agent_turn": row.get("agent_turn"),
                        "turn_index": row.get("turn_index"), "turn": row.get("turn"),
                        "candidates_from": "mc-values", "pair_labels": "monte-carlo"})
    counts["pairs"] = len(out)
    return out, counts


def oracle_pairs_stage(values: str | os.PathLike[str], pairs_out: str | os.PathLike[str], pairs_per_turn: int,
                       seed: int, prog: str = "sweet-agent train-actor") -> list[dict[str, Any]]:
    """``train-actor --pair_labels monte-carlo``: the step pairs of :func:`monte_carlo_pairs`
    from the values file ``values``, written to ``pairs_out`` (with its meta) and returned."""
    try:
        rows, meta = read_values_file(values)
    except MCValuesError as exc:
        raise SystemExit(f"{prog}: --mc_values: {exc}") from None
    pairs, counts = monte_carlo_pairs(rows, pairs_per_turn, seed)
    mc = meta.get("settings", {}).get("mc", {})
    settings = {"format": PAIRS_FORMAT, "pair_labels": "monte-carlo", "seed": int(seed),
                "pairs_per_turn": int(pairs_per_turn), "values": {"path": str(values), "sha256": digest(rows)},
                "mc": mc}
    write_pair_file(pairs_out, pairs, {"format": PAIRS_FORMAT, "settings": settings, "shard": "0/1",
                                       "counts": counts, "failed_turns": [],
                                       "candidates": {"from": "mc-values", "file": str(values)}})
    print(f"[train-actor] {len(pairs)} step pairs labelled by Monte-Carlo values (oracle credit: chosen has the higher "
          f"value, top half against bottom half) from {counts['turns']} agent turns of {values} "
          f"(k={mc.get('rollouts_per_candidate')} completions per candidate)"
          + (f"; {counts['turns_without_pair']} turns gave no pair (equal values)" if counts["turns_without_pair"] else "")
          + f" -> {pairs_out}")
    return pairs


# ----------------------------------------------------------------------------- the command
def _flag(g, name: str, **kw) -> None:
    """``--name_with_underscores`` and its ``--hyphen-spelling``."""
    names = [f"--{name}"] + ([f"--{name.replace('_', '-')}"] if "_" in name else [])
    g.add_argument(*names, **kw)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("data and candidates")
    _flag(g, "data", required=True, nargs="+", help="offline trajectory JSONL file(s) (with rewards)")
    _flag(g, "output", required=True, help="values JSONL to write (with OUTPUT.meta.json)")
    _flag(g, "num_candidates", type=int, default=8, help="candidates sampled per agent turn (default: %(default)s)")
    _flag(g, "rollouts_per_candidate", type=int, default=4, metavar="K",
          help="completions played per non-final candidate; a candidate that ends the episode is graded once "
               "(default: %(default)s)")
    _flag(g, "explore_candidates", type=float, default=0.0,
          help="fraction of a turn's candidates started with a question opener the local policy completes "
               "(as train-actor's; default: %(default)s)")
    _flag(g, "turn_fraction", type=float, default=1.0, help="fraction of the agent turns to use (default: all)")
    _flag(g, "first_turns", type=int, default=0, help="only each trajectory's first N agent turns (0 = all)")
    _flag(g, "skip_turns", type=int, default=0, help="leave out each trajectory's first N agent turns")
    _flag(g, "system_prompt", default=None, help="agent system prompt (default: the one each record's meta carries)")
    _flag(g, "seed", type=int, default=0, help="turn k's candidates are sampled with seed + k, as train-actor's")
    _flag(g, "extend", default=None, metavar="VALUES",
          help="add completions to a finished values file of these settings: its candidates kept, each going-on one "
               "played --rollouts_per_candidate more times (new draws), values pooled into --output")

    g = parser.add_argument_group("behaviour policy (samples candidates and plays the completions)")
    _flag(g, "policy", default="default", help="default, a checkpoint path, a cached hub id, or openai:MODEL")
    _flag(g, "question_policy", default=None,
          help="local model that completes --explore_candidates' question openers (an endpoint cannot continue a "
               "forced start): needed when --policy is openai:MODEL, e.g. the same weights as a local model "
               "(default: --policy)")
    _flag(g, "base_url", default=None, help="endpoint of openai:MODEL (default: $OPENAI_BASE_URL)")
    _flag(g, "api_key", default=None, help="API key of that endpoint (default: $OPENAI_API_KEY or 'EMPTY')")
    _flag(g, "dtype", default="bfloat16", choices=["bfloat16", "float32", "float16", "auto"],
          help="local model dtype; the rollouts' default, so the completions are the behaviour policy's "
               "(default: %(default)s)")
    _flag(g, "device", default="auto", help="where a local policy runs (default: %(default)s)")
    _flag(g, "max_new_tokens", type=int, default=256, help="per candidate and per completion turn (default: %(default)s)")
    _flag(g, "temperature", type=float, default=1.0, help="candidates' sampling temperature (default: %(default)s)")
    _flag(g, "top_p", type=float, default=1.0, help="(default: %(default)s)")
    _flag(g, "rollout_temperature", type=float, default=None,
          help="the completions' temperature (default: --temperature)")
    _flag(g, "concurrency", type=int, default=8, help="completions played at once (one policy batch) (default: %(default)s)")

    g = parser.add_argument_group("environment")
    _flag(g, "env", default="ColBench-Backend-v0", help="Gymnasium id (default: %(default)s)")
    _flag(g, "simulator", default="offline", help="offline | openai | transformers (default: %(default)s; the "
                                                  "trajectories' own)")
    _flag(g, "simulator_kwargs", default=None, metavar="JSON", help="options of the simulator (JSON object)")
    _flag(g, "max_turns", type=int, default=None, help="agent turns per episode (default: the records' meta.max_turns)")
    _flag(g, "reward_mode", default="fraction", choices=["fraction", "success"],
          help="fraction: share of hidden tests passed (the protocol's); success: all or nothing (default: %(default)s)")

    g = parser.add_argument_group("execution")
    _flag(g, "resume", action="store_true", help="continue an interrupted stage from OUTPUT.turns.jsonl (same settings)")
    _flag(g, "no_progress", action="store_true", help="no progress bar")


def _settings_and_records(args: argparse.Namespace) -> tuple[MCConfig, list[dict[str, Any]]]:
    """The run's settings and trajectories; every refusal is a ValueError / OSError naming the flag or file."""
    check_output_writable(args.output)
    try:
        sim_kwargs = json.loads(args.simulator_kwargs) if args.simulator_kwargs else None
    except json.JSONDecodeError as exc:
        raise ValueError(f"--simulator_kwargs is not JSON: {exc}") from None
    config = MCConfig(num_candidates=args.num_candidates, rollouts_per_candidate=args.rollouts_per_candidate,
                      explore_candidates=args.explore_candidates, turn_fraction=args.turn_fraction,
                      first_turns=args.first_turns, skip_turns=args.skip_turns, max_new_tokens=args.max_new_tokens,
                      temperature=args.temperature, top_p=args.top_p, rollout_temperature=args.rollout_temperature,
                      env_id=args.env, simulator=args.simulator, simulator_kwargs=sim_kwargs,
                      max_turns=args.max_turns, reward_mode=args.reward_mode, concurrency=args.concurrency)
    make_env(config, config.max_turns or 10).close()  # an unknown --env / --simulator fails before a model loads
    records = R.load_records([p for spec in args.data for p in spec.split(",") if p])
    if not records:
        raise ValueError(f"no usable trajectories in {', '.join(args.data)}")
    if args.question_policy and args.explore_candidates > 0 and args.question_policy.startswith("openai:"):
        raise ValueError("--question_policy must be a local model (it continues a forced start of a turn), got "
                         f"{args.question_policy!r}")
    return config, records


def run(args: argparse.Namespace) -> int:
    from sweet_agent.policies import load_policy

    try:  # the command line and its input, refused before any work: exit 2 (CONTRIBUTING, "Errors and exit statuses")
        config, records = _settings_and_records(args)
        extend = read_values_file(args.extend) if args.extend else None
        if extend is not None and Path(args.extend).resolve() == Path(args.output).resolve():
            raise ValueError("--extend and --output name the same file; write the pooled values elsewhere")
    except (ValueError, OSError) as exc:
        raise SystemExit(str(exc)) from None
    endpoint = args.policy.startswith("openai:")
    from sweet_agent.devices import resolve_device

    policy = load_policy(args.policy, base_url=args.base_url, api_key=args.api_key, dtype=args.dtype,
                         device=args.device if endpoint else resolve_device(args.device), max_batch_size=args.concurrency, concurrency=args.concurrency,
                         **({} if endpoint else {"quiet": True}))
    qpolicy = None
    if args.question_policy and args.explore_candidates > 0 and extend is None:  # openers continued locally, the rest from --policy
        qpolicy = load_policy(args.question_policy, dtype=args.dtype, device=resolve_device(args.device),
                              max_batch_size=args.concurrency, quiet=True)
    stats: dict[str, Any] = {}
    try:
        rows = build_mc_values(records, policy, config, seed=args.seed, system_prompt=args.system_prompt,
                               output=args.output, resume=args.resume, progress=not args.no_progress, stats=stats,
                               question_policy=qpolicy, extend=extend)
    finally:
        policy.close()
        if qpolicy is not None:
            qpolicy.close()
    k_total, played = config.rollouts_per_candidate, stats["rollouts"]
    added = ""
    if extend is not None:
        k_total += int(extend[1]["settings"]["mc"]["rollouts_per_candidate"])
        played -= int(extend[1].get("counts", {}).get("rollouts", 0))
        added = f": {config.rollouts_per_candidate} added to {args.extend}'s, {played} new"
    print(f"[mc-values] {len(rows)} agent turns of {len(records)} trajectories: {stats['candidates']} candidates "
          f"({stats['answer_candidates']} graded directly, {stats['question_candidates']} question openers), "
          f"{stats['rollouts']} completions in all (k={k_total}{added}) in {stats['wall_seconds']:.1f} s "
          f"-> {args.output}")
    if stats.get("failed_rollouts"):
        print(f"[mc-values] {stats['failed_rollouts']} completions failed for infrastructure reasons and are left out "
              f"of their means; {stats['unmeasured_candidates']} candidates have no value")
    if stats.get("replay_mismatches"):
        print(f"[mc-values] warning: in {stats['replay_mismatches']} turns the replayed person's replies differ from "
              "the recorded ones (a simulator other than the trajectories', or one that samples): the completions "
              "continue from the replayed dialogue")
    if stats.get("failed"):
        turn, error = stats["failed"][0]
        print(f"[mc-values] warning: {len(stats['failed'])} turns failed (first: turn {turn}: {error[:200]}); "
              f"{args.output} is not written until `--resume` finishes them")
        return 1
    return 0
