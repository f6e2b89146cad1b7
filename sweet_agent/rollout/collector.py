"""Play many ColBench episodes concurrently with a policy and write trajectory records.

Two drivers, one bookkeeping:

- **batched** (local models): a pool of ``concurrency`` environments steps in lock-step; every
  round, the next turn of *all* active episodes is generated in one :meth:`Policy.generate`
  call (one padded batch), then the environments step in a thread pool (the simulator or the
  grader may wait on I/O). A finished episode's slot is refilled at once.
- **async** (endpoint policies): every episode is a coroutine that awaits its own request, so
  ``concurrency`` requests are in flight at once and latency overlaps.

Reproducibility: episode ``(task_index, k)`` resets its environment with
``derive_seed(seed, "env", task_index, k)`` and samples turn ``t`` with
``derive_seed(seed, "policy", task_index, k, t)``. Policies sample per conversation, so an
episode's dialogue does not depend on the concurrency, the batch it shared, or a resume.

Each finished episode is appended and fsync'd at once (:class:`TrajectoryWriter`); ``resume``
skips the episode ids already on disk, so an interrupted run continues with nothing lost or
duplicated, and refuses a file made with another seed, task source, k, policy or simulator.
``overwrite`` writes the new run beside the old file and renames it over at the end, unless
every episode of the new run failed (then the old file stays and :class:`RolloutError` says so).

Faults cost one episode at most: a simulator reply that fails is retried (the env leaves the
agent's turn unconsumed), and an episode whose policy or simulator fails for good (after the
client's retries) is written as a *failed* record — ``"error"`` set, ``meta.failed`` true,
``meta.end_reason`` saying whose failure it was (:mod:`colbench_gym.tasks.accounting`): an
infrastructure failure (the agent's endpoint, the simulator, ...) has ``reward``/``success``
null and ``meta.infrastructure_failure`` true, an ``agent_error`` scores 0 — while the other
episodes go on. Only a run of ``max_consecutive_failures`` failures in a row (the server is
down, the model name is wrong) stops the run, with that error.

Every record's ``meta`` has the one schema :data:`sweet_agent.trajectories.ROLLOUT_META` (every
key always present, never null), including the cost of the episode: the agent's and the
simulated person's models and prompt/completion tokens, and its wall time.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from colbench_gym.jsonl import check_output_writable
from colbench_gym.spaces import encodable_data
from colbench_gym.tasks.accounting import add_usage, end_reason_of, is_infrastructure, usage
from sweet_agent.policies.base import Generation, Policy, SamplingParams, derive_seed
from sweet_agent.prompts import agent_messages, env_kind, system_prompt
from sweet_agent.trajectories import (
    Record,
    TrajectoryWriter,
    episode_id,
    iter_trajectories,
    make_record,
    rollout_meta,
)

#: A failed simulator reply is retried this many times (with backoff) before the episode fails.
SIMULATOR_RETRIES = 2

#: Without --episodes, a rollout plays every task of the source only up to this many.
MAX_IMPLICIT_TASKS = 100_000


class RolloutError(RuntimeError):
    """A rollout could not be planned or an episode failed."""


@dataclass
class RolloutConfig:
    """What to play. ``num_tasks`` tasks (indices ``0..num_tasks-1``, or ``task_indices``) times
    ``samples_per_task`` samples each."""

    env_id: str = "ColBench-Backend-v0"
    tasks: Any = "embedded:test"
    simulator: Any = "offline"
    simulator_kwargs: dict[str, Any] | None = None
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    num_tasks: int | None = None
    task_indices: Sequence[int] | None = None
    samples_per_task: int = 1
    seed: int = 0
    sampling: SamplingParams = field(default_factory=SamplingParams)
    concurrency: int = 8
    max_turns: int = 10
    system_prompt: str | None = None  # None: our instructions for the env (sweet_agent.prompts)
    #: Stop the run (RolloutError) after this many failed episodes in a row; 0 = never.
    max_consecutive_failures: int = 32

    def __post_init__(self) -> None:
        if self.samples_per_task < 1:
            raise ValueError(f"samples_per_task (--k) must be >= 1, got {self.samples_per_task}")
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency}")
        if self.num_tasks is not None and self.num_tasks < 1:
            raise ValueError(f"num_tasks (--episodes) must be >= 1, got {self.num_tasks}")
        if self.max_turns < 1:
            raise ValueError(f"max_turns (--max-turns) must be >= 1, got {self.max_turns}")

    def identity(self, policy_name: str) -> dict[str, Any]:
        """What a resumed file must have been made with (stored in every record's ``meta``)."""
        return {"env": self.env_id, "tasks": self.tasks if isinstance(self.tasks, str) else "custom",
                "seed": self.seed, "k": self.samples_per_task, "policy": policy_name,
                "simulator": self.simulator if isinstance(self.simulator, str) else type(self.simulator).__name__}

    @property
    def prompt(self) -> str:
        return self.system_prompt if self.system_prompt is not None else system_prompt(env_kind(self.env_id), self.max_turns)


@dataclass(frozen=True)
class EpisodeSpec:
    task_index: int
    sample: int

    @property
    def id(self) -> str:
        return episode_id(self.task_index, self.sample)


@dataclass
class RolloutResult:
    path: Path | None
    records: list[Record]  # the episodes played by this call (not those skipped on resume)
    skipped: int
    wall_time: float
    completion_tokens: int
    #: Episode ids a resume played again because their earlier record was an infrastructure
    #: failure (the old records are in ``<output>.replaced``).
    replayed: list[str] = field(default_factory=list)
    #: Infrastructure failures a resume kept: they failed ``MAX_REPLAYS`` times already.
    kept_failures: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[Record]:
        """Episodes of this call recorded as failed (their ``error`` says why)."""
        return [r for r in self.records if r.get("error")]

    @property
    def infrastructure_failures(self) -> list[Record]:
        """Failed episodes that are not the agent's doing (endpoint, simulator, ...: ``meta.end_reason``)."""
        return [r for r in self.records if r["meta"]["infrastructure_failure"]]

    @property
    def success_rate(self) -> float:
        """Over the episodes the agent is accountable for (infrastructure failures left out)."""
        played = [r for r in self.records if not r["meta"]["infrastructure_failure"]]
        return sum(bool(r.get("success")) for r in played) / max(1, len(played))

    @property
    def mean_reward(self) -> float:
        played = [r for r in self.records if r.get("reward") is not None]
        return sum(float(r["reward"]) for r in played) / max(1, len(played))


def make_env(cfg: RolloutConfig):
    import gymnasium as gym

    import colbench_gym  # noqa: F401 - registers the environments

    return gym.make(cfg.env_id, tasks=cfg.tasks, simulator=cfg.simulator, simulator_kwargs=cfg.simulator_kwargs,
                    max_turns=cfg.max_turns, **cfg.env_kwargs)


def plan_episodes(cfg: RolloutConfig, source_size: int) -> list[EpisodeSpec]:
    """Episode ids in play order: all tasks' sample 0, then sample 1, ... (so a partial run
    covers as many tasks as possible)."""
    if cfg.task_indices is not None:
        indices = [int(i) for i in cfg.task_indices]
        bad = [i for i in indices if not 0 <= i < source_size]
        if bad:
            raise RolloutError(f"task indices {bad[:5]} are out of range for a task source of {source_size} tasks")
    else:
        if cfg.num_tasks is None and source_size > MAX_IMPLICIT_TASKS:
            raise RolloutError(f"the task source holds {source_size} tasks (a generated source is unbounded); "
                               "say how many to play with --episodes N")
        n = source_size if cfg.num_tasks is None else cfg.num_tasks
        if n > source_size:
            raise RolloutError(f"--episodes {n} asks for more tasks than the source holds ({source_size}); "
                               "use --episodes <= that, more samples per task with --k, or tasks=generated:train")
        indices = list(range(n))
    return [EpisodeSpec(i, k) for k in range(cfg.samples_per_task) for i in indices]


class _Episode:
    """One episode in flight: its env, the agent's view and the generation stats."""

    def __init__(self, spec: EpisodeSpec, env: Any, cfg: RolloutConfig, policy: Policy):
        self.spec, self.env, self.cfg, self.policy_name = spec, env, cfg, policy.name
        self.agent_model = policy.model_name
        self.turn = 0
        self.messages: list[dict[str, str]] = []
        self.tokens = 0
        self.agent_usage = usage()
        self.simulator_usage = usage()
        self.truncated_turns = 0
        self.openers: list[str] = []  # per agent turn: the exploration opener a behaviour policy forced, or ""
        self.explore_rates: list[float] = []  # per agent turn: the probability it had of an opener
        self.record: Record | None = None
        self.env_seed = derive_seed(cfg.seed, "env", spec.task_index, spec.sample)
        self.started = time.perf_counter()

    def reset(self) -> None:
        self.started = time.perf_counter()
        _, info = self.env.reset(seed=self.env_seed, options={"task_index": self.spec.task_index})
        self.messages = info["messages"]

    def prompt(self) -> list[dict[str, str]]:
        # What the policy reads leaves Python (an endpoint's JSON, a tokenizer): any str the agent
        # wrote earlier goes in encodable (a lone surrogate as U+FFFD), never as the policy's failure.
        return encodable_data(agent_messages(self.messages, self.cfg.prompt))

    def seed(self) -> int:
        return derive_seed(self.cfg.seed, "policy", self.spec.task_index, self.spec.sample, self.turn)

    def step(self, gen: Generation) -> bool:
        """Apply one agent turn; returns True when the episode ended (``self.record`` is set).

        A failed simulator reply leaves the turn unconsumed in the env, so the same action is
        stepped again (``SIMULATOR_RETRIES`` times, with backoff) before the error propagates.
        """
        from colbench_gym.simulators import SimulatorError
        from colbench_gym.simulators.openai_resilience import backoff

        for attempt in range(SIMULATOR_RETRIES + 1):
            try:
                _, reward, terminated, truncated, info = self.env.step(gen.text)
                break
            except SimulatorError:
                if attempt >= SIMULATOR_RETRIES:
                    raise
                time.sleep(backoff(attempt))
        self.turn += 1
        self.tokens += gen.completion_tokens
        add_usage(self.agent_usage, usage(gen.prompt_tokens, gen.completion_tokens))
        self.truncated_turns += gen.finish_reason == "length"
        self.openers.append(gen.prefix)
        self.explore_rates.append(float(getattr(gen, "explore_rate", 0.0)))
        self.messages = info["messages"]
        self.simulator_usage = info.get("simulator_usage") or self.simulator_usage
        if terminated or truncated:
            self.record = self._finish(reward, info)
            return True
        return False

    def fail(self, exc: BaseException, default_reason: str = "environment_error") -> Record:
        """Record this episode as failed: the dialogue so far, ``error``, and the end reason
        (:func:`colbench_gym.tasks.accounting.end_reason_of`: the exception's own, else
        ``default_reason``, what the caller was doing). An infrastructure failure has no score
        (reward and success null: reports leave it out of the agent's rates); an ``agent_error``
        is the agent's failure and scores 0."""
        error = f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:2000]
        reason = end_reason_of(exc, default_reason)
        try:
            task = self.env.unwrapped.task_source[self.spec.task_index].to_record()
        except Exception:  # the task itself may be what failed
            task = {"problem_description": f"<task {self.spec.task_index} could not be loaded>"}
        meta = self._meta({}, end_reason=reason, failed=True, error=error)
        infra = is_infrastructure(reason)
        backend = getattr(self.env.unwrapped, "kind", "backend") == "backend"
        rec = make_record(task, self.messages or [{"role": "user", "content": task["problem_description"]}],
                          answer="", reward=0.0, success=None if infra or not backend else False, meta=meta)
        if infra:
            rec["reward"] = None  # absent: an infrastructure failure has no score (evaluate counts it apart)
        rec["error"] = error
        self.record = rec
        return rec

    def _meta(self, info: dict[str, Any], **values: Any) -> dict[str, Any]:
        """The record's ``meta`` in the one rollout schema (:data:`sweet_agent.trajectories.ROLLOUT_META`)."""
        reason = values.pop("end_reason")
        try:
            sim_model = self.env.unwrapped.simulator.model_name
        except Exception:  # noqa: BLE001 - an env that failed to build its simulator
            sim_model = ""
        return rollout_meta(
            **self.cfg.identity(self.policy_name),
            episode_id=self.spec.id, task_index=self.spec.task_index, sample=self.spec.sample,
            task_id=info.get("task_id") or self._task_id(), env_seed=self.env_seed, turns=self.turn,
            max_turns=self.cfg.max_turns, end_reason=reason, infrastructure_failure=is_infrastructure(reason),
            agent_model=self.agent_model, simulator_model=sim_model, agent_usage=self.agent_usage,
            simulator_usage=self.simulator_usage, wall_time_s=time.perf_counter() - self.started,
            completion_tokens=self.tokens, length_truncated_turns=self.truncated_turns,
            sampling={"temperature": self.cfg.sampling.temperature, "top_p": self.cfg.sampling.top_p,
                      "top_k": self.cfg.sampling.top_k, "max_new_tokens": self.cfg.sampling.max_new_tokens},
            system_prompt=self.cfg.prompt,
            exploration={"prefilled": sum(bool(o) for o in self.openers), "openers": self.openers,
                         "rates": self.explore_rates},
            **values,
        )

    def _task_id(self) -> str:
        try:
            return self.env.unwrapped.task_source[self.spec.task_index].task_id
        except Exception:  # noqa: BLE001 - the task itself may be what failed
            return ""

    def _finish(self, env_reward: float, info: dict[str, Any]) -> Record:
        task = self.env.unwrapped.task.to_record()  # training-time only: the official record
        if "similarity" in info:
            reward = float(info["similarity"])
        elif info.get("tests_total"):
            reward = info["tests_passed"] / info["tests_total"]
        else:
            reward = float(env_reward)
        success = info.get("success")
        meta = self._meta(info, end_reason=info.get("end_reason") or info.get("ended_by"), ended_by=info.get("ended_by"),
                          tests_passed=info.get("tests_passed"), tests_total=info.get("tests_total"),
                          tests_unpassable=info.get("tests_unpassable"), grade_error=info.get("grade_error"),
                          # simulator replies the leak guard withheld (each regenerated or refused)
                          simulator_leaks_blocked=info.get("simulator_leaks_blocked", 0),
                          simulator_replies_refused=info.get("simulator_replies_refused", 0))
        rec = make_record(task, self.messages, answer=str(info.get("answer", "")), reward=reward,
                          success=None if success is None else bool(success), meta=meta)
        rec["error"] = ""  # always present (one schema): "" = the episode did not fail
        if meta["infrastructure_failure"]:
            # the grader failed, no test could measure the task, or the reference page did not
            # render: what the env computed measures nothing, so the record has no score (as every
            # infrastructure failure), and says why; training skips it, --resume plays it again
            why = info.get("grade_error") or ("the reference page did not render"
                                              if meta["end_reason"] == "rendering_error" else "")
            rec["reward"] = rec["success"] = None
            rec["error"] = f"{meta['end_reason']}: {why}".rstrip(": ")[:2000]
            meta.update(failed=True, error=rec["error"])
        return rec


class _Progress:
    """The rollout's progress bar, counted in agent turns.

    WHY turns, not episodes: one episode of a local model can take minutes (a 2-episode run once
    sat at ``0/4`` for 9.5 minutes, looking hung). The total is episodes x ``max_turns``, the most
    turns they can take; every agent turn played moves the bar by one, and an episode that ends
    early (an answer, a failure) moves it by the turns it did not need, so the bar ends full. The
    postfix counts finished episodes and their successes and failures.
    """

    def __init__(self, episodes: int, max_turns: int, enabled: bool, desc: str) -> None:
        from tqdm.auto import tqdm

        self.max_turns, self.episodes = max_turns, episodes
        self._counted: dict[str, int] = {}  # turns already on the bar, per episode in flight
        # miniters=1: every turn may redraw (at most every mininterval), however far an episode's end jumped
        self.bar = tqdm(total=episodes * max_turns, disable=not enabled, desc=desc, unit="turn", miniters=1,
                        dynamic_ncols=True)
        self._postfix(0, 0, 0)

    def turns_played(self, episodes: Iterable[_Episode]) -> None:
        """Move the bar by the agent turns ``episodes`` played since it last looked."""
        moved = 0
        for ep in episodes:
            moved += ep.turn - self._counted.get(ep.spec.id, 0)
            self._counted[ep.spec.id] = ep.turn
        if moved:
            self.bar.update(moved)

    def episode_finished(self, ep: _Episode, records: list[Record]) -> None:
        """Fill the finished episode's share of the bar and count it in the postfix."""
        self.bar.update(max(0, self.max_turns - self._counted.pop(ep.spec.id, 0)))
        self._postfix(len(records), sum(bool(r.get("success")) for r in records),
                      sum(bool(r.get("error")) for r in records))

    def _postfix(self, done: int, succeeded: int, failed: int) -> None:
        self.bar.set_postfix(episodes=f"{done}/{self.episodes}", success=f"{succeeded}/{done}",
                             **({"failed": failed} if failed else {}))

    def close(self) -> None:
        self.bar.close()


_FLAGS = {"env": "--env", "tasks": "--tasks", "seed": "--seed", "k": "--k", "policy": "--policy",
          "simulator": "--simulator"}


def check_resume_identity(path: str | Path, identity: dict[str, Any]) -> None:
    """Refuse to resume a file made with other settings (naming each difference)."""
    path = Path(path)
    if not path.exists() or path.stat().st_size == 0:
        return
    for rec in iter_trajectories(path, validate=False):
        meta = rec.get("meta") if isinstance(rec, dict) else None
        if not isinstance(meta, dict):
            continue
        diffs = [f"{_FLAGS[k]} {meta[k]!r} (now {v!r})" for k, v in identity.items()
                 if k in meta and meta[k] != v]
        if diffs:
            raise RolloutError(f"--resume: {path} was made with {', '.join(diffs)}; resume with the same settings, "
                               "or write a new --output (or --overwrite it)")
        return


def partial_path(path: str | Path) -> Path:
    """Where ``--overwrite`` writes the new run until it is complete."""
    path = Path(path)
    return path.with_name(path.name + ".partial")


def collect(policy: Policy, cfg: RolloutConfig, output: str | Path | None = None, *, resume: bool = False,
            overwrite: bool = False, progress: bool = True,
            on_record: Callable[[Record], None] | None = None) -> RolloutResult:
    """Play the planned episodes with ``policy``; append each finished one to ``output``.

    Returns the records played by this call (failed episodes included, with ``error`` set).
    With ``resume=True`` the episodes already in ``output`` are skipped (their ids come from
    ``meta.episode_id``); the file must have been made with the same settings. With
    ``overwrite=True`` an existing ``output`` stays untouched until the new run is complete:
    the new records go to ``<output>.partial``, renamed over ``output`` at the end.
    """
    envs: list[Any] = []
    writer: TrajectoryWriter | None = None
    out = Path(output) if output is not None else None
    target = out
    try:
        if out is not None:
            check_output_writable(out)
        probe = make_env(cfg)
        envs.append(probe)
        specs = plan_episodes(cfg, len(probe.unwrapped.task_source))  # before touching the output file
        if out is not None:
            if resume:
                check_resume_identity(out, cfg.identity(policy.name))
            if overwrite and out.exists() and out.stat().st_size > 0:
                target = partial_path(out)
            writer = TrajectoryWriter(target, resume=resume, overwrite=overwrite)
        done = writer.done if writer is not None else {}
        todo = [s for s in specs if s.id not in done]
        skipped = len(specs) - len(todo)
        records: list[Record] = []
        tokens = 0
        failures_in_a_row = 0
        t0 = time.perf_counter()
        bar = _Progress(len(todo), cfg.max_turns, progress, f"{cfg.env_id} {policy.name}")

        def finished(ep: _Episode) -> None:
            nonlocal tokens, failures_in_a_row
            assert ep.record is not None
            ep.record = encodable_data(ep.record)  # a UTF-8 file (and a tokenizer later): any str the agent sent
            if writer is not None:
                writer.write(ep.record)
            records.append(ep.record)
            tokens += ep.tokens
            if on_record is not None:
                on_record(ep.record)
            bar.episode_finished(ep, records)
            failures_in_a_row = failures_in_a_row + 1 if ep.record.get("error") else 0
            if cfg.max_consecutive_failures and failures_in_a_row >= cfg.max_consecutive_failures:
                raise RolloutError(f"{failures_in_a_row} episodes in a row failed, the last with: "
                                   f"{ep.record['error']}; fix the cause, then rerun with --resume")

        concurrency = min(cfg.concurrency, max(1, len(todo)))
        while len(envs) < concurrency:
            envs.append(make_env(cfg))
        if todo:
            if policy.prefers_async:
                asyncio.run(_run_async(policy, cfg, todo, envs[:concurrency], finished, bar.turns_played))
            else:
                _run_batched(policy, cfg, todo, envs[:concurrency], finished, bar.turns_played)
        bar.close()
        if writer is not None:
            writer.close()
            if target != out:
                if records and all(r.get("error") for r in records):
                    # A run in which nothing succeeded (endpoint down, wrong model name) must not
                    # replace the previous file: it stays, the failures are kept beside it.
                    raise RolloutError(
                        f"every one of the {len(records)} episodes failed (the first with: "
                        f"{records[0]['error'][:300]}); {out} was NOT replaced, the failed run is in {target}")
                os.replace(target, out)  # the previous output is replaced only by a complete run
        planned = {sp.id for sp in todo}
        return RolloutResult(out, records, skipped, time.perf_counter() - t0, tokens,
                             replayed=[i for i in writer.replayed if i in planned] if writer is not None else [],
                             kept_failures=list(writer.kept_failures) if writer is not None else [])
    finally:
        for env in envs:
            env.close()
        if writer is not None:
            writer.close()


def _attempt(ep: _Episode, fn: Callable[..., Any], *args: Any) -> Any:
    """Run one episode's reset/step; an error ends that episode as failed (True = ended)."""
    try:
        return fn(*args)
    except Exception as exc:  # one bad reply or task costs this episode, never the run
        ep.fail(exc)
        return True


def _generate(policy: Policy, cfg: RolloutConfig, active: list[_Episode]) -> list[Any]:
    """The next turn of every active episode, in one batch. A batch the policy raises on is asked
    again one episode at a time: an episode the local model cannot take while it takes the others
    (a dialogue past its positions raises IndexError) fails alone, as the async driver fails it
    (``agent_error``, scored 0, unless the exception names its cause), with None for its turn,
    and the run goes on. When every episode fails alone too (a device assert that sticks), the
    failure is the model's: it is raised and the run stops, never 0s for the agent."""
    try:
        return policy.generate([ep.prompt() for ep in active], cfg.sampling, [ep.seed() for ep in active])
    except Exception:
        if len(active) == 1:
            raise  # nothing tells the episode from the model (a device that stays broken): the run stops
    gens: list[Any] = []
    errors: list[Exception | None] = []
    for ep in active:
        try:
            gens.append(policy.generate([ep.prompt()], cfg.sampling, [ep.seed()])[0])
            errors.append(None)
        except Exception as exc:  # noqa: BLE001 - judged below
            gens.append(None)
            errors.append(exc)
    if all(e is not None for e in errors):
        raise errors[0]  # every episode fails alone too: the model's failure (a sticky device assert), not theirs
    for ep, exc in zip(active, errors):
        if exc is not None:  # the model takes the others: this dialogue is what it cannot take
            ep.fail(exc, "agent_error")
    return gens


def _run_batched(policy: Policy, cfg: RolloutConfig, todo: list[EpisodeSpec], envs: list[Any],
                 finished: Callable[[_Episode], None],
                 turns_played: Callable[[list[_Episode]], None] = lambda eps: None) -> None:
    queue = deque(todo)
    slots: list[_Episode | None] = [None] * len(envs)
    with ThreadPoolExecutor(max_workers=len(envs), thread_name_prefix="colbench-env") as pool:
        while queue or any(slots):
            starting = []
            for i, ep in enumerate(slots):
                if ep is None and queue:
                    slots[i] = _Episode(queue.popleft(), envs[i], cfg, policy)
                    starting.append(slots[i])
            for ep, end in zip(starting, list(pool.map(lambda e: _attempt(e, e.reset), starting))):
                if end:
                    finished(ep)
                    slots[slots.index(ep)] = None
            active = [ep for ep in slots if ep is not None]
            if not active:
                continue
            gens = _generate(policy, cfg, active)
            ended = list(pool.map(lambda e, g: True if g is None else _attempt(e, e.step, g), active, gens))
            turns_played(active)
            for ep, end in zip(active, ended):
                if end:
                    finished(ep)
                    slots[slots.index(ep)] = None


async def _run_async(policy: Policy, cfg: RolloutConfig, todo: list[EpisodeSpec], envs: list[Any],
                     finished: Callable[[_Episode], None],
                     turns_played: Callable[[list[_Episode]], None] = lambda eps: None) -> None:
    loop = asyncio.get_running_loop()
    free: asyncio.Queue = asyncio.Queue()
    for env in envs:
        free.put_nowait(env)
    with ThreadPoolExecutor(max_workers=len(envs), thread_name_prefix="colbench-env") as pool:

        async def play(spec: EpisodeSpec) -> None:
            env = await free.get()
            try:
                ep = _Episode(spec, env, cfg, policy)
                asking = False  # what failed: the policy (agent_error unless it names its cause) or the env
                try:
                    await loop.run_in_executor(pool, ep.reset)
                    while True:
                        asking = True
                        gen = (await policy.agenerate([ep.prompt()], cfg.sampling, [ep.seed()]))[0]
                        asking = False
                        ended = await loop.run_in_executor(pool, ep.step, gen)
                        turns_played([ep])
                        if ended:
                            break
                except Exception as exc:  # one bad reply costs this episode, never the run
                    ep.fail(exc, "agent_error" if asking else "environment_error")
                finished(ep)
            finally:
                free.put_nowait(env)

        tasks = [asyncio.ensure_future(play(s)) for s in todo]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        finally:
            await policy.aclose()
