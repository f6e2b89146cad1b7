"""``sweet-agent train-actor``: step-level pairs from the critic, then DPO on the policy.

Stages (each skippable): sample ``--num_candidates`` actions per agent turn of ``--data`` from the
policy, score them with the critic from ``train-critic``, write pairs to ``--pairs_out``
(``--only_pairs`` stops there); or ``--pairs_in`` reuses pairs; then train with TRL's DPO.
The command line is the dataclasses: :class:`StepPairArguments`,
:class:`~sweet_agent.actor.config.ActorConfig` and ``trl.ModelConfig`` (``--config cpu|paper``).

The step-pair stage at scale (docs/training.md): the policy, critic and critic reference sit on
``--device`` (default ``auto``: the GPU when there is one); ``--candidates_from openai:MODEL
--candidates_base_url URL`` samples the candidates from a serving engine (vLLM, SGLang,
llama.cpp's server) instead of Hugging Face ``generate``; ``--shard I/N`` builds 1/N of the
pairs (``sweet-agent merge-pairs`` joins the shards; under ``accelerate launch`` each process
builds its share on its own GPU and they train on the union); ``--resume`` continues an
interrupted stage from its journal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

from sweet_agent.devices import DEVICE_HELP
from sweet_agent.training.arguments import TrainingDataArguments
from sweet_agent.training.command import TrainingCommand, check_run, nothing_to_train
from sweet_agent.training.files import read_jsonl
from sweet_agent.training.models import load_model

PROG = "sweet-agent train-actor"
PRESETS = "actor"


@dataclass
class StepPairArguments(TrainingDataArguments):
    """Where the step pairs come from (built from --data with --critic, or read from --pairs_in)."""

    critic: str | None = field(default=None, metadata={"help": "directory written by `sweet-agent train-critic`"})
    critic_ref: str | None = field(default=None, metadata={"help": "the critic's reference model (default: "
                                                                   "from sweet_critic.json)"})
    pairs_out: str | None = field(default=None, metadata={"help": "write step pairs here (default "
                                                                  "OUTPUT_DIR/step_pairs.jsonl)"})
    pairs_in: str | None = field(default=None, metadata={
        "help": "train on these step pairs instead of building them (several files: separated by commas)"})
    only_pairs: bool = field(default=False, metadata={"help": "build and write the pairs, do not train"})
    pair_labels: str = field(default="critic", metadata={
        "help": "who labels a step pair: critic (SWEET-RL: the --critic's step score) or monte-carlo (the "
                "Monte-Carlo values of --mc_values: the oracle-credit actor, step-level DPO's upper bound)",
        "choices": ["critic", "monte-carlo"]})
    mc_values: str | None = field(default=None, metadata={
        "help": "values file of `sweet-agent mc-values` (candidates and their Monte-Carlo values) for "
                "--pair_labels monte-carlo"})
    candidates_file: str | None = field(default=None, metadata={
        "help": "share one set of candidates between runs: read every turn's candidates from this file when it "
                "exists (refused in one line unless the base policy, sampling settings, --candidate_seed and records "
                "are the same), else sample them and write it. Every training seed's critic then scores the same "
                "base-policy samples"})
    device: str = field(default="auto", metadata={"help": "where the step-pair stage's policy, critic and critic "
                                                          "reference run: " + DEVICE_HELP.split(": ", 1)[1]})
    candidates_from: str = field(default="policy", metadata={
        "help": "who samples the candidates: policy (the local model, on --device) or openai:MODEL (an "
                "OpenAI-compatible server at --candidates_base_url serving the same weights: vLLM, SGLang, "
                "llama.cpp's server; one request per turn for all its candidates)"})
    candidates_base_url: str | None = field(default=None, metadata={
        "help": "endpoint of --candidates_from openai:MODEL, e.g. http://127.0.0.1:8000/v1 (default: $OPENAI_BASE_URL)"})
    candidates_api_key: str | None = field(default=None, metadata={
        "help": "API key of that endpoint (default: $OPENAI_API_KEY or 'EMPTY')"})
    candidates_concurrency: int = field(default=32, metadata={"help": "most requests in flight to that endpoint"})
    candidates_turns_in_flight: int = field(default=4, metadata={
        "help": "turns requested ahead from that endpoint while the critic scores (a batching server such as "
                "vLLM batches them; 0: none, a turn is requested once the one before is scored, e.g. when the "
                "server and the critic share a CPU)"})
    candidates_timeout: float = field(default=600.0, metadata={"help": "seconds per request to that endpoint"})
    candidates_max_retries: int = field(default=3, metadata={
        "help": "retries of a failed request (429/5xx, dropped connection, timeout); a turn that still fails is "
                "reported and counted, and --resume samples it again"})
    shard: str | None = field(default=None, metadata={
        "help": "I/N: build only shard I of N of the pairs (turns k with k %% N == I), into "
                "PAIRS.shard-I-of-N.jsonl (needs --only_pairs; join them with `sweet-agent merge-pairs`). Under "
                "accelerate launch / torchrun each process builds its own shard by default"})
    resume: bool = field(default=False, metadata={
        "help": "continue an interrupted run: the step-pair stage from its journal (PAIRS.turns.jsonl, same "
                "settings), the training from its newest checkpoint (as --resume_from_checkpoint last)"})


COMMAND = TrainingCommand(PROG, PRESETS, StepPairArguments, "sweet_agent.actor.config:ActorConfig", __doc__,
                          unit="step pairs")
dataclass_types, parse_args = COMMAND.dataclass_types, COMMAND.parse_args


def _load_critic(data_args: StepPairArguments, dtype: str | None, step_score: str = "critic-ref",
                 device: str | None = "auto"):
    """The critic of ``--critic`` (the one loader, :func:`sweet_agent.critic.loading.load_critic`);
    the release's step score reads no critic reference (the sampling policy takes its place), so
    none is loaded for it."""
    from sweet_agent.critic.loading import CriticLoadError, load_critic, read_critic_meta

    try:
        if step_score == "release" and read_critic_meta(data_args.critic).get("critic_type") == "regression":
            raise SystemExit(f"{PROG}: --step_score release needs a log-probability critic, but {data_args.critic} "
                             "is a regression critic (no token log-probabilities); use --step_score critic-ref")
        return load_critic(data_args.critic, dtype, data_args.critic_ref, with_reference=step_score != "release",
                           device=device)
    except CriticLoadError as exc:
        raise SystemExit(f"{PROG}: {exc}") from None


def stage_device(data_args: StepPairArguments, cfg) -> str:
    """The device of the step-pair stage's models (:func:`sweet_agent.devices.resolve_device`;
    ``--use_cpu`` makes ``auto`` the CPU)."""
    from sweet_agent.devices import DeviceError, resolve_device

    try:
        return resolve_device(data_args.device, use_cpu=bool(getattr(cfg, "use_cpu", False)))
    except DeviceError as exc:
        raise SystemExit(f"{PROG}: {exc}") from None


def candidate_source(data_args: StepPairArguments):
    """``None`` for the local policy, else the :class:`OpenAIPolicy` of ``--candidates_from openai:MODEL``."""
    spec = (data_args.candidates_from or "policy").strip()
    if spec == "policy":
        if data_args.candidates_base_url:  # else the endpoint would be silently ignored
            raise SystemExit(f"{PROG}: --candidates_base_url {data_args.candidates_base_url} is read only with "
                             "--candidates_from openai:MODEL (without it the local policy samples the candidates); "
                             "add --candidates_from openai:MODEL, the model that endpoint serves, or drop "
                             "--candidates_base_url")
        return None
    if not spec.startswith("openai:"):
        raise SystemExit(f"{PROG}: --candidates_from must be policy or openai:MODEL, got {spec!r}")
    from sweet_agent.policies import PolicyError
    from sweet_agent.policies.openai_policy import OpenAIPolicy

    try:
        return OpenAIPolicy(spec[len("openai:"):], base_url=data_args.candidates_base_url,
                            api_key=data_args.candidates_api_key, concurrency=data_args.candidates_concurrency,
                            timeout=data_args.candidates_timeout, max_retries=data_args.candidates_max_retries)
    except PolicyError as exc:
        raise SystemExit(f"{PROG}: --candidates_from {spec}: {exc}") from None


def needs_local_policy(data_args: StepPairArguments, cfg) -> bool:
    """Whether building the pairs needs the policy model here: it samples the candidates, scores
    them (``--step_score release``) or completes question openers (``--explore_candidates``)."""
    return (candidate_source_is_local(data_args) or cfg.step_score == "release" or cfg.explore_candidates > 0)


def candidate_source_is_local(data_args: StepPairArguments) -> bool:
    return (data_args.candidates_from or "policy").strip() == "policy"


def stage_shard(data_args: StepPairArguments):
    """``(shard, launched)``: ``--shard I/N``, else this process's share under a multi-process
    launch (``RANK``/``WORLD_SIZE``), else the whole stage."""
    import os

    from sweet_agent.actor.pair_files import PairFileError, Shard

    try:
        if data_args.shard:
            return Shard.parse(data_args.shard), False
        world = int(os.environ.get("WORLD_SIZE", "1") or 1)
        if world > 1:
            return Shard(int(os.environ.get("RANK", "0") or 0), world), True
        return Shard(), False
    except (PairFileError, ValueError) as exc:
        raise SystemExit(f"{PROG}: {exc}") from None


def check_stage(data_args: StepPairArguments, cfg):
    """The step-pair stage's settings checked before any model loads: ``(shard, launched)``."""
    if not data_args.critic:
        raise SystemExit(f"{PROG}: pass --data and --critic to build step pairs, or --pairs_in")
    shard, launched = stage_shard(data_args)
    if shard.count > 1 and not launched and not data_args.only_pairs:
        raise SystemExit(f"{PROG}: --shard {shard.label} builds 1/{shard.count} of the pairs: add --only_pairs, join "
                         "the shards with `sweet-agent merge-pairs`, then train with --pairs_in")
    if data_args.candidates_turns_in_flight < 0 or data_args.candidates_concurrency < 1:
        raise SystemExit(f"{PROG}: --candidates_turns_in_flight must be >= 0 and --candidates_concurrency >= 1")
    stage_device(data_args, cfg)
    candidate_source(data_args)
    return shard, launched


def policy_identity(model_args) -> dict:
    """What a shared candidates file is keyed by on the policy's side: the checkpoint's
    fingerprint (:func:`~sweet_agent.training.models.model_fingerprint`) and the dtype it
    samples in."""
    from sweet_agent.training.models import model_fingerprint, resolve_model

    spec = getattr(model_args, "model_name_or_path", None)
    return {**model_fingerprint(resolve_model(spec)), "name": spec, "dtype": getattr(model_args, "dtype", None)}


def build_pairs(data_args: StepPairArguments, cfg, policy, tok, dtype: str | None, model_args=None) -> list[dict]:
    """Sample, score and pair candidates for the offline agent turns; write and return the rows
    (under a multi-process launch: every process's, once all of them have finished)."""
    from sweet_agent.actor.candidates import build_step_pairs
    from sweet_agent.actor.pair_files import PairFileError

    shard, launched = check_stage(data_args, cfg)
    device = stage_device(data_args, cfg)
    source = candidate_source(data_args)
    records = COMMAND.read_records(data_args)
    critic = _load_critic(data_args, dtype, cfg.step_score, device)
    if critic.meta.get("pair_rule") == "release" and cfg.step_score != "release":
        print(f"[train-actor] note: the critic was trained with --pair_rule release; candidates are scored with "
              f"--step_score {cfg.step_score} (ours); --step_score release scores them as the release does")
    whole = data_args.pairs_out or f"{cfg.output_dir}/step_pairs.jsonl"
    out = shard.path(whole)
    where = f"policy on {device}" if source is None else f"{source.name} at {source.base_url}"
    print(f"[train-actor] step pairs: shard {shard.label}, candidates from {where}, critic on {device}"
          f"{' (resuming)' if data_args.resume else ''}", flush=True)
    stats: dict = {}
    timings: dict[str, float] = {}
    try:
        rows = build_step_pairs(records, policy, tok, critic, cfg,
                                system_prompt=data_args.system_prompt or critic.meta.get("system_prompt"),
                                seed=cfg.seed, progress=True, stats=stats, candidates=source, shard=shard,
                                pairs_out=out, resume=data_args.resume,
                                turns_in_flight=data_args.candidates_turns_in_flight, timings=timings,
                                candidates_file=data_args.candidates_file,
                                policy_identity=policy_identity(model_args) if data_args.candidates_file else None)
    except PairFileError as exc:
        raise SystemExit(f"{PROG}: {exc}") from None
    finally:
        if source is not None:
            source.close()
    del critic
    _report(rows, stats, timings, cfg, len(records), out)
    if launched:
        rows = _gather_shards(whole, shard, is_main=shard.index == 0)
    return rows


def _report(rows, stats, timings, cfg, n_records: int, out) -> None:
    print(f"[train-actor] {len(rows)} step pairs from {stats.get('turns', 0)} agent turns of {n_records} "
          f"trajectories (step score: {cfg.step_score}; candidates from {stats.get('candidates_from')}) -> {out}")
    built, wall = timings.get("sampled_turns", 0), timings.get("wall_seconds", 0.0)
    if built and wall > 0:
        print(f"[train-actor] {built} turns in {wall:.1f} s: {timings['sampled_candidates'] / wall:.2f} candidates/s, "
              f"{timings['sampled_tokens'] / wall:.1f} generated tokens/s; critic "
              f"{timings.get('scoring_seconds', 0.0) / built:.3f} s per turn"
              + (f"; {stats['resumed_turns']} turns were already in the journal" if stats.get("resumed_turns") else ""))
    if stats.get("reused_turns"):
        print(f"[train-actor] candidates of {stats['reused_turns']} turns read from --candidates_file (sampled once "
              "from the base policy; scored here by this critic)")
    if stats.get("question_candidates"):
        where = "every agent turn" if not cfg.explore_turns else f"agent turns 1-{cfg.explore_turns}"
        print(f"[train-actor] {stats['question_candidates']} of {stats['candidates']} candidates started with a "
              f"question opener (--explore_candidates {cfg.explore_candidates:g}, at {where})")
    if stats.get("truncated_candidates"):
        print(f"[train-actor] warning: {stats['truncated_candidates']} of {stats['candidates']} candidates were cut "
              f"at --max_new_tokens {cfg.max_new_tokens} (no end of turn); raise it to score whole actions")
    if stats.get("turns_without_pair"):
        print(f"[train-actor] {stats['turns_without_pair']} of {stats['turns']} turns gave no pair "
              "(all candidates identical)")
    failed = stats.get("failed") or []
    if failed:
        turn, error = failed[0]
        print(f"[train-actor] warning: {len(failed)} of {stats['turns']} turns failed after retries and have no pairs "
              f"(first: turn {turn}: {error[:200]}); rerun with --resume to sample only those again")
        if len(failed) == stats.get("turns"):
            raise SystemExit(f"{PROG}: every one of the {len(failed)} turns failed (first: {error[:300]})")


def _gather_shards(whole: str, shard, is_main: bool, poll: float = 2.0) -> list[dict]:
    """Every process's pairs once all have finished (a multi-process launch builds one shard per
    process): waits for the other shards' files, merges them (refusing mismatched settings) and,
    on the main process, writes the merged file to ``whole``."""
    import time

    from sweet_agent.actor.pair_files import PairFileError, Shard, journal_path, merge_pair_files, write_pair_file

    paths = [Shard(i, shard.count).path(whole) for i in range(shard.count)]
    waited = 0.0
    while not all(p.is_file() and not journal_path(p).exists() for p in paths):
        if waited and waited % 60 < poll:
            left = [str(p) for p in paths if not p.is_file() or journal_path(p).exists()]
            print(f"[train-actor] waiting for the other processes' step pairs: {', '.join(left)}", flush=True)
        time.sleep(poll)
        waited += poll
    try:
        rows, meta = merge_pair_files(paths)
    except PairFileError as exc:
        raise SystemExit(f"{PROG}: {exc}") from None
    if is_main:
        write_pair_file(whole, rows, meta)
        print(f"[train-actor] {len(rows)} step pairs of {shard.count} processes merged -> {whole}")
    return rows


def resume_training_too(data_args: StepPairArguments, cfg) -> None:
    """``--resume`` continues the training as well (from its newest checkpoint), as the flag did
    before the step-pair stage had a journal; an explicit ``--resume_from_checkpoint`` wins."""
    if data_args.resume and not cfg.resume_from_checkpoint:
        cfg.resume_from_checkpoint = "last"


def run(args: SimpleNamespace) -> int:
    data_args, cfg, model_args = args.script, args.training, args.model
    from sweet_agent.actor.trainer import make_dpo_trainer

    check_run(PROG, cfg)
    resume_training_too(data_args, cfg)
    if data_args.pair_labels == "monte-carlo":  # the oracle-credit actor (sweet_agent.actor.mc_values)
        from sweet_agent.actor.mc_values import oracle_pairs_stage

        if not data_args.mc_values or data_args.pairs_in or data_args.critic:
            raise SystemExit(f"{PROG}: --pair_labels monte-carlo takes its pairs from --mc_values FILE (of "
                             "`sweet-agent mc-values`), with no --critic or --pairs_in")
        rows = oracle_pairs_stage(data_args.mc_values, data_args.pairs_out or f"{cfg.output_dir}/step_pairs.jsonl",
                                  cfg.pairs_per_turn, cfg.seed)
        policy = tok = None
        if data_args.only_pairs:
            return 0
    elif data_args.pairs_in:
        paths = [p.strip() for p in data_args.pairs_in.split(",") if p.strip()]
        rows = [row for path in paths for row in read_jsonl(path)]
        print(f"[train-actor] {len(rows)} step pairs from {', '.join(paths)}")
        policy = tok = None
    else:
        policy = tok = None
        check_stage(data_args, cfg)
        _refuse_partitioned_models()
        if needs_local_policy(data_args, cfg):
            policy, tok = load_model(model_args, device=stage_device(data_args, cfg))
        rows = build_pairs(data_args, cfg, policy, tok, model_args.dtype, model_args)
        if data_args.only_pairs:
            return 0
    if not rows:
        nothing_to_train(PROG, "no step pairs (every turn's candidates were identical, or no turns were selected)",
                         "raise --num_candidates, --temperature or --turn_fraction")
    COMMAND.train_policy(make_dpo_trainer, rows, cfg, model_args, policy, tok, merge=data_args.merge_adapter)
    return 0


def _refuse_partitioned_models() -> None:
    """Under DeepSpeed ZeRO-3 every model loads partitioned across processes (each holds a slice
    of every weight) and cannot sample or score outside the training engine."""
    from transformers.integrations import is_deepspeed_zero3_enabled

    if is_deepspeed_zero3_enabled():
        raise SystemExit(f"{PROG}: under DeepSpeed ZeRO-3 the policy and the critic load partitioned and cannot sample "
                         "or score candidates; build the pairs first without DeepSpeed (--only_pairs; --shard I/N or "
                         "a plain multi-GPU accelerate launch, candidates from the policy or --candidates_from "
                         "openai:MODEL), then train with --pairs_in under ZeRO-3")
