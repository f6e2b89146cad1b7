"""Training set-up shared by every ``sweet-agent train-*`` command: the command line (TRL's
``TrlParser`` over the command's dataclasses, presets, renamed flags; :class:`TrainingCommand`),
what a config resolves for the machine (:func:`resolve_machine_defaults`), model loading, LoRA
via TRL's ``get_peft_config``, final saving, JSON(L) files.

WHY a module of its own: the critic, the actor, the baselines and GRPO are independent of each
other; how a run is configured, a model loaded and saved lives here, below all of them (what
they read, records and pairs, is in :mod:`sweet_agent.training_data`, below this).

A command is TRL's script pattern: ``(data arguments, its config dataclass, trl.ModelConfig)``
parsed by ``TrlParser``, so every config field is a flag (``--learning_rate`` or
``--learning-rate``), ``--config preset.yaml`` (or a shipped preset name, ``--config cpu``) sets
defaults and flags override it. The flags the commands had before keep working and say what
replaced them (:data:`RENAMED_FLAGS`).
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NoReturn

from colbench_gym.jsonl import write_jsonl_atomic
from sweet_agent.training_data.pairs import PAIR_RULES

PRESETS_DIR = Path(__file__).resolve().parent / "configs"

#: Exit status of a stage that found nothing to train on (after a one-line message).
NOTHING_TO_TRAIN = 3


#: ``--merge_adapter``, an option of every training command that saves a model (train-grpo too).
MERGE_ADAPTER_HELP = ("with LoRA (--use_peft): also save the adapter merged into a copy of the base model, a plain "
                      "checkpoint any tool loads (default); false: save only the adapter (OUTPUT_DIR/adapter, ~17 MB "
                      "for the default model at r 8 instead of ~2 GB), which every sweet-agent loader merges into "
                      "its base")


@dataclass
class TrainingDataArguments:
    """What a training command reads (the role of TRL's ``ScriptArguments``)."""

    data: list[str] | None = field(default=None, metadata={"help": "trajectory JSONL file(s) with rewards"})
    system_prompt: str | None = field(
        default=None, metadata={"help": "agent system prompt of the rollouts (default: the one each record's "
                                        "meta carries)"})
    merge_adapter: bool = field(default=True, metadata={"help": MERGE_ADAPTER_HELP})


@dataclass
class PreferenceDataArguments(TrainingDataArguments):
    """Data options of the commands that compare trajectories of the same task."""

    success_threshold: float | None = field(
        default=None, metadata={"help": "reward counting as success (default: the record's success flag, "
                                        "else reward 1)"})
    pair_rule: str = field(default="success", metadata={"help": "which trajectories are preferred: "
                                                                  + ", ".join(PAIR_RULES),
                                                          "choices": list(PAIR_RULES)})


def resolve_machine_defaults(cfg) -> None:
    """What a training config leaves to the machine, resolved before the config's own
    ``__post_init__``: mixed precision (:func:`resolve_precision`) and the process-group backend
    of a DeepSpeed launch without an accelerator (:func:`resolve_ddp_backend`). Every training
    config (critic, actor, RFT, multi-turn DPO, GRPO) calls this one function."""
    resolve_precision(cfg)
    resolve_ddp_backend(cfg)


def resolve_precision(cfg) -> None:
    """TRL's configs default to bf16 mixed precision (``bf16=None``), which a machine without a
    bf16 GPU rejects: resolve ``None`` to bf16 only where a GPU supports it."""
    if cfg.bf16 is None:
        import torch

        cfg.bf16 = bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported() and not cfg.fp16)


def resolve_ddp_backend(cfg) -> None:
    """Name the process-group backend (``gloo``) for a DeepSpeed launch on a machine without an
    accelerator, unless ``--ddp_backend`` names one. Called before the config's own
    ``__post_init__`` (which sets up the processes).

    WHY: with no ``--ddp_backend``, accelerate 1.15's ``PartialState`` finds no accelerator backend
    on a CPU-only host (``backend=None``), lets DeepSpeed start torch.distributed (world size 2 for
    2 processes), then, because ``backend is None``, records one process (``accelerate/state.py``:
    ``self.num_processes = 1``). transformers then sizes DeepSpeed's batch for one process and
    DeepSpeed's check fails (``train_batch_size 1 != 1 * 1 * 2``). ``gloo`` is what DeepSpeed
    itself uses on CPU. (The trainer's ``--use_cpu`` also avoids it; the accelerate config's
    ``use_cpu`` does not, its DeepSpeed launcher does not pass it on.)"""
    if getattr(cfg, "ddp_backend", "") is not None:
        return
    if os.environ.get("ACCELERATE_USE_DEEPSPEED", "false").lower() != "true":
        return
    import torch

    found = getattr(torch, "accelerator", None)  # torch >= 2.6; before it, CUDA is what accelerate finds
    if not (found.is_available() if found is not None else torch.cuda.is_available()):
        cfg.ddp_backend = "gloo"


def distributed_summary(trainer) -> str | None:
    """``process I of N (DeepSpeed ZeRO stage S; this process holds X of Y parameter values)``
    for a multi-process or DeepSpeed run, ``None`` for a single plain process: what a run log
    needs to show that the launch really was what its config says."""
    acc = trainer.accelerator
    engine = trainer.model_wrapped
    stage = engine.zero_optimization_stage() if hasattr(engine, "zero_optimization_stage") else None
    if acc.num_processes == 1 and stage is None:
        return None
    line = f"process {acc.process_index} of {acc.num_processes}"
    if stage is not None:
        params = list(acc.unwrap_model(trainer.model).parameters())
        held = sum(p.ds_tensor.numel() if hasattr(p, "ds_tensor") else p.numel() for p in params)
        total = sum(getattr(p, "ds_numel", p.numel()) for p in params)
        line += f" (DeepSpeed ZeRO stage {stage}; this process holds {held:,} of {total:,} parameter values)"
    return line


# ----------------------------------------------------------------------------- command line
def _renamed(*new: str) -> Callable[[str], list[str]]:
    return lambda value: [x for flag in new for x in (flag, value)]


def _lora_r(value: str) -> list[str]:
    r = int(value)
    if r <= 0:
        return []
    # What the old flag meant: a LoRA adapter on every linear layer, alpha 2r, no dropout.
    return ["--use_peft", "true", "--lora_r", str(r), "--lora_alpha", str(2 * r),
            "--lora_target_modules", "all-linear", "--lora_dropout", "0"]


def _save_steps(value: str) -> list[str]:
    return ["--save_strategy", "steps", "--save_steps", value] if int(value) > 0 else []


#: Flags of earlier releases -> (takes a value, translation, replacement to name or None when
#: the spelling is current and only its implied settings are spelled out).
RENAMED_FLAGS: dict[str, tuple[bool, Callable[[str], list[str]], str | None]] = {
    "--model": (True, _renamed("--model_name_or_path"), "--model_name_or_path"),
    "--epochs": (True, _renamed("--num_train_epochs"), "--num_train_epochs"),
    "--batch-size": (True, _renamed("--per_device_train_batch_size", "--per_device_eval_batch_size"),
                     "--per_device_train_batch_size (and --per_device_eval_batch_size)"),
    "--grad-accum": (True, _renamed("--gradient_accumulation_steps"), "--gradient_accumulation_steps"),
    "--resume": (False, lambda _: ["--resume_from_checkpoint", "last"], "--resume_from_checkpoint last"),
    "--lora-r": (True, _lora_r, "--use_peft --lora_r R (with --lora_alpha, --lora_target_modules, --lora_dropout)"),
    "--save-steps": (True, _save_steps, None),
    # train-critic
    "--no-privileged-info": (False, lambda _: ["--use_privileged_info", "false"], "--use_privileged_info false"),
    # train-actor / train-mtdpo
    "--sft-weight": (True, lambda v: ["--loss_weights", "1.0", v], "--loss_weights 1.0 W"),
}


def translate_flags(argv: Sequence[str], prog: str, renamed: dict | None = None) -> list[str]:
    """Rewrite flags of earlier releases into current ones, saying so once per flag on stderr."""
    renamed = RENAMED_FLAGS if renamed is None else renamed
    out: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, inline = arg.partition("=")
        if name in renamed:
            takes_value, translate, new = renamed[name]
            if takes_value:
                if eq:
                    value = inline
                elif i + 1 < len(args):
                    value = args[i + 1]
                    i += 1
                else:
                    raise SystemExit(f"{prog}: {name} needs a value")
            else:
                value = ""
            if new is not None:
                print(f"{prog}: {name} is deprecated; use {new}", file=sys.stderr)
            out += translate(value)
        else:
            out.append(arg)
        i += 1
    return out


def preset_path(command: str, name: str) -> Path:
    """The shipped preset ``name`` (``cpu``, ``paper``) of a trainer folder under configs/."""
    return PRESETS_DIR / command / f"{name}.yaml"


@dataclass(frozen=True)
class TrainingCommand:
    """One ``sweet-agent train-*`` command, TRL's script pattern written once: its name, its
    preset folder (``sweet_agent/configs/<presets>/``) and its dataclasses ``(script arguments,
    config, trl.ModelConfig)``, every field a flag. A command module declares one, exposes its
    ``dataclass_types`` and ``parse_args`` (what the ``sweet-agent`` dispatcher calls), and writes
    only what is its own in ``run`` (the rows, the trainer) between :meth:`read_records` and
    :meth:`train_policy` / :meth:`train_and_save` (a command that trains the policy on rows of
    trajectories passes just those to :meth:`train_on_trajectories`).

    ``config`` is the config class or its ``"module:Name"``: a config derived from TRL's imports
    trl, which a command module then loads only when it parses."""

    prog: str
    presets: str
    script_arguments: type
    config: type | str
    description: str | None = None
    require_output_dir: bool = True
    #: What one training row is (``step pairs``, ``trajectories``, ...): with it,
    #: :meth:`train_and_save` prints and writes the run's budget (:func:`record_budget`).
    unit: str | None = None

    @property
    def name(self) -> str:
        """``train-critic`` of ``sweet-agent train-critic``: the prefix of the command's log lines."""
        return self.prog.split()[-1]

    def dataclass_types(self) -> tuple[type, type, type]:
        """``(script arguments, config, trl.ModelConfig)``, the dataclasses ``TrlParser`` reads."""
        from trl import ModelConfig

        config = self.config
        if isinstance(config, str):
            module, _, name = config.partition(":")
            config = getattr(importlib.import_module(module), name)
        return self.script_arguments, config, ModelConfig

    def parse_args(self, argv: Sequence[str], prog: str | None = None,
                   description: str | None = None) -> SimpleNamespace:
        """``SimpleNamespace(script, training, model)`` from the command line (TRL's TrlParser,
        presets and renamed flags: :func:`parse_command`)."""
        script, training, model = parse_command(prog or self.prog, self.presets, self.dataclass_types(), argv,
                                                description or self.description, self.require_output_dir)
        return SimpleNamespace(script=script, training=training, model=model)

    def read_records(self, data_args) -> list[dict[str, Any]]:
        """The validated trajectories of ``--data`` (required)."""
        from sweet_agent.training_data.records import load_records

        return load_records(require_data(self.prog, data_args.data))

    def train_on_trajectories(self, args: SimpleNamespace, make_rows: Callable[..., list],
                              make_trainer: Callable[..., Any], *, empty: str, fix: str, rules: Mapping[str, str],
                              summary: str) -> int:
        """The whole ``run`` of a command that fine-tunes the policy on rows built from the
        trajectories of ``--data`` (RFT, multi-turn DPO): check the run, read the records, build
        the rows (``make_rows(records, success_threshold, system_prompt, pair_rule)``), stop with
        :func:`nothing_to_train` (``empty``; ``fix`` and the other ``rules``, see :func:`no_rows_advice`)
        when there are none, print ``summary``, then
        :meth:`train_policy`. ``empty`` and ``summary`` are formatted with the counts ``records``
        and ``rows`` and the ``rule``."""
        data_args, cfg, model_args = args.script, args.training, args.model
        check_run(self.prog, cfg)
        records = self.read_records(data_args)
        rows = make_rows(records, data_args.success_threshold, data_args.system_prompt, data_args.pair_rule)
        counts = {"records": len(records), "rows": len(rows), "rule": data_args.pair_rule}
        if not rows:
            nothing_to_train(self.prog, empty.format(**counts),
                             no_rows_advice(data_args.pair_rule, records, fix, rules))
        print(f"[{self.name}] {summary.format(**counts)}")
        self.train_policy(make_trainer, rows, cfg, model_args, merge=data_args.merge_adapter)
        return 0

    def train_policy(self, make_trainer: Callable[..., Any], rows, cfg, model_args, model=None,
                     tokenizer=None, merge: bool = True) -> None:
        """Load ``--model_name_or_path`` (unless ``model`` and ``tokenizer`` are given), build its
        trainer on ``rows`` (``make_trainer(model, tokenizer, rows, cfg, peft_config=...)``, LoRA
        with ``--use_peft``), then :meth:`train_and_save`."""
        if model is None:
            model, tokenizer = load_model(model_args)
        trainer = make_trainer(model, tokenizer, rows, cfg, peft_config=peft_config(model_args))
        self.train_and_save(trainer, tokenizer, cfg, model_args, merge)

    def train_and_save(self, trainer, tokenizer, cfg, model_args, merge: bool = True) -> None:
        """Train (resuming from ``--resume_from_checkpoint``, if any) and save the final model
        where the next stage loads it (:func:`save_final`; ``merge=False``: the LoRA adapter alone)."""
        trainer.train(resume_from_checkpoint=resume_checkpoint(cfg))
        save_final(trainer, tokenizer, cfg.output_dir, model_args, merge=merge)
        if self.unit:
            record_budget(trainer, self.name, self.unit, cfg.output_dir)
        print(f"[{self.name}] saved to {cfg.output_dir}")


#: Written beside every trained model: what the run's optimizer saw (:func:`training_budget`).
BUDGET_FILE = "training_budget.json"


def training_budget(trainer, unit: str) -> dict[str, Any]:
    """What a finished run's optimizer saw, in the terms a budget is set in: its rows
    (``train_rows`` of ``unit``), the optimizer steps, the rows drawn by those steps
    (``samples_seen``: each full epoch sees every row once, the steps of an unfinished epoch
    ``steps x per-device batch x accumulation x processes`` of them, at most the rows) and
    ``epochs`` = samples seen / rows; beside them what was asked (``num_train_epochs``,
    ``max_steps``: -1 when the epochs decide) and the learning rate. The same computation for
    every method, so equal epochs mean each saw its own data equally often."""
    import math

    args, state = trainer.args, trainer.state
    rows = len(trainer.train_dataset)
    world = max(1, int(getattr(args, "world_size", 1) or 1))
    batch, accumulation = int(args.per_device_train_batch_size), int(args.gradient_accumulation_steps)
    per_step = batch * accumulation * world
    steps_per_epoch = max(1, math.ceil(math.ceil(rows / (batch * world)) / accumulation)) if rows else 1
    steps = int(state.global_step)
    full, rest = divmod(steps, steps_per_epoch)
    seen = full * rows + min(rows, rest * per_step)
    return {"unit": unit, "train_rows": rows, "optimizer_steps": steps, "samples_seen": seen,
            "epochs": round(seen / rows, 6) if rows else 0.0, "steps_per_epoch": steps_per_epoch,
            "trainer_epoch": None if state.epoch is None else round(float(state.epoch), 6),
            "num_train_epochs": float(args.num_train_epochs), "max_steps": int(args.max_steps),
            "per_device_train_batch_size": batch, "gradient_accumulation_steps": accumulation, "processes": world,
            "learning_rate": float(args.learning_rate)}


def record_budget(trainer, name: str, unit: str, output_dir: str) -> dict[str, Any]:
    """Print the run's budget (:func:`training_budget`) and write it to ``OUTPUT_DIR/training_budget.json``
    (on the main process)."""
    budget = {"command": name, **training_budget(trainer, unit)}
    if trainer.accelerator.is_main_process:
        write_json(Path(output_dir) / BUDGET_FILE, budget)
        print(f"[{name}] budget: {budget['samples_seen']} {unit} seen = {budget['epochs']:.2f} epochs of "
              f"{budget['train_rows']}, in {budget['optimizer_steps']} optimizer steps (batch "
              f"{budget['per_device_train_batch_size']} x accumulation {budget['gradient_accumulation_steps']} x "
              f"{budget['processes']} process(es), learning rate {budget['learning_rate']:g}) -> "
              f"{Path(output_dir) / BUDGET_FILE}", flush=True)
    return budget


def parse_command(prog: str, preset_dir: str, dataclass_types: Sequence[type], argv: Sequence[str],
                  description: str | None = None, require_output_dir: bool = True) -> tuple[Any, ...]:
    """Parse ``argv`` into instances of ``dataclass_types`` the way TRL's scripts do.

    ``--config NAME`` with a shipped preset name (see ``sweet_agent/configs/<preset_dir>/``) reads
    that preset; any other value is a YAML path. Command-line flags override the preset.
    """
    args = translate_flags(argv, prog)
    if "--config" in args:
        k = args.index("--config")
        if k + 1 >= len(args):
            raise SystemExit(f"{prog}: --config needs a YAML file or a preset name "
                             f"({', '.join(p.stem for p in sorted((PRESETS_DIR / preset_dir).glob('*.yaml')))})")
        spec = args[k + 1]
        if not Path(spec).is_file():
            shipped = preset_path(preset_dir, spec)
            if not shipped.is_file():
                raise SystemExit(f"{prog}: --config {spec}: no such file and no shipped preset of that name "
                                 f"(shipped: {', '.join(p.stem for p in sorted(shipped.parent.glob('*.yaml')))})")
            args[k + 1] = str(shipped)
    parsed = make_parser(prog, dataclass_types, description, preset_dir).parse_args_and_config(args)
    if require_output_dir and not _sets_output_dir(args):
        raise SystemExit(f"{prog}: --output_dir is required (where checkpoints and the final model go)")
    return parsed


def _sets_output_dir(args: list[str]) -> bool:
    import yaml

    for k, a in enumerate(args):
        if a.split("=", 1)[0] in ("--output_dir", "--output-dir"):
            return True
        if a == "--config" and k + 1 < len(args):
            with open(args[k + 1]) as fh:
                if "output_dir" in (yaml.safe_load(fh) or {}):
                    return True
    return False


def make_parser(prog: str, dataclass_types: Sequence[type], description: str | None = None,
                preset_dir: str | None = None):
    """TRL's ``TrlParser`` over the command's dataclasses (every field a flag; no abbreviations)."""
    from trl import TrlParser

    shipped = ", ".join(p.stem for p in sorted((PRESETS_DIR / preset_dir).glob("*.yaml"))) if preset_dir else ""
    epilog = ("--config FILE.yaml" + (f" | {shipped.replace(', ', ' | ')}" if shipped else "")
              + ": a preset whose values become the defaults (shipped presets: sweet_agent/configs/"
              f"{preset_dir or '<trainer>'}/); flags override it. Every flag is also spelled with hyphens "
              "(--learning-rate). Flags of earlier releases (--model, --epochs, --batch-size, --grad-accum, "
              "--lora-r, --resume, ...) still work and print their replacement.")
    return TrlParser(list(dataclass_types), prog=prog, description=description, epilog=epilog,
                     allow_abbrev=False)


def check_run(prog: str, cfg) -> None:
    """One-line errors for settings every command needs."""
    check_report_to(prog, cfg.report_to)


_TRACKERS = {"trackio": "trackio", "wandb": "wandb", "tensorboard": "tensorboard", "mlflow": "mlflow"}


def check_report_to(prog: str, report_to: str | list[str] | None) -> None:
    """Fail before training when a requested logger's package is missing (transformers would
    only fail once the trainer is built, after the data and the model are loaded)."""
    import importlib.util

    names = [report_to] if isinstance(report_to, str) else list(report_to or [])
    for name in names:
        module = _TRACKERS.get(name)
        if module and importlib.util.find_spec(module) is None and not (
                name == "tensorboard" and importlib.util.find_spec("tensorboardX")):
            raise SystemExit(f"{prog}: --report_to {name} needs the {module!r} package; "
                             f"`pip install {module}` or choose another logger (none, tensorboard, wandb, trackio)")


def no_rows_advice(rule: str, records: Sequence[Mapping[str, Any]], collect: str, rules: Mapping[str, str]) -> str:
    """What to change when ``--pair_rule rule`` built nothing from ``records``: when every
    trajectory has the same reward no rule can prefer one, so the advice is the data; otherwise
    ``collect``, the threshold (for the ``success`` rule, the only one it decides) and the other
    ``rules`` (name -> when it helps), never the rule in use."""
    rewards = {r.get("reward") for r in records}
    if len(records) > 1 and len(rewards) == 1:
        return (f"every one of the {len(records)} trajectories has reward {next(iter(rewards))!r}, so no --pair_rule "
                f"can prefer one: {collect}, with a longer --max-new-tokens or on easier tasks, so that samples differ")
    tips = [collect] + (["lower --success_threshold"] if rule == "success" else [])
    others = [f"--pair_rule {name}" + (f" ({why})" if why else "") for name, why in rules.items() if name != rule]
    return ", ".join(tips) + (", or use " + " / ".join(others) if others else "")


def nothing_to_train(prog: str, why: str, what_to_change: str) -> NoReturn:
    """Stop a stage that has no data to train on with a one-line message (exit status 3)."""
    print(f"{prog}: nothing to train on: {why}; {what_to_change}", file=sys.stderr)
    raise SystemExit(NOTHING_TO_TRAIN)


def require_data(prog: str, data: list[str] | None) -> list[str]:
    if not data:
        raise SystemExit(f"{prog}: --data is required (trajectory JSONL file(s) from `sweet-agent rollout`)")
    return data


# ----------------------------------------------------------------------------- models
def resolve_model(spec: str | None) -> str:
    """A local checkpoint directory for ``spec`` (``None``: the embedded default policy model)."""
    spec = spec or "default"
    try:
        from sweet_agent.policies.default_model import resolve_model_path
    except ImportError:  # pragma: no cover - policies ship with the package
        return spec
    return resolve_model_path(spec)


def load_model(spec, dtype: str | None = "float32", attn_implementation: str | None = None,
               device: str | None = None):
    """``(model, tokenizer)`` for training. ``spec`` is a path / model id or a ``trl.ModelConfig``
    (its model, dtype and attention implementation are used). ``device`` (``auto``, ``cuda``, ...:
    :func:`sweet_agent.devices.resolve_device`) moves the model there, for the models a stage
    runs outside a Trainer (the step-pair stage's policy, critic and reference); ``None`` leaves
    it where it loads (the CPU), for the Trainer to place."""
    import torch
    from transformers import AutoTokenizer

    from sweet_agent.policies.checkpoints import load_causal_lm, tokenizer_dir

    if hasattr(spec, "model_name_or_path"):
        spec, dtype, attn_implementation = spec.model_name_or_path, spec.dtype, spec.attn_implementation
    path = resolve_model(spec)
    tok = AutoTokenizer.from_pretrained(tokenizer_dir(path))
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    if not tok.chat_template:
        raise ValueError(f"{path}: the tokenizer has no chat template; training needs an instruct/chat model")
    kw: dict[str, Any] = {"dtype": dtype if dtype in (None, "auto") else getattr(torch, dtype)}
    if attn_implementation:
        kw["attn_implementation"] = attention_implementation(attn_implementation)
    model = load_causal_lm(path, **kw)  # a LoRA adapter (--merge_adapter false): merged into its base
    model.config.use_cache = False
    if device is not None:
        from sweet_agent.devices import place

        place(model, device)
    return model, tok


def initial_copy(model):
    """A frozen copy of ``model`` as it is now: the reference of a full fine-tuning run (critic,
    actor, multi-turn DPO). Under DeepSpeed ZeRO-3 the model was loaded already partitioned
    across processes (``deepspeed.zero.Init``) and a deep copy holds only empty shards, so the
    copy is loaded again from the model's checkpoint, partitioned the same way (this is why TRL's
    ``create_reference_model`` refuses ZeRO-3)."""
    import copy

    from transformers.integrations import is_deepspeed_zero3_enabled

    if not is_deepspeed_zero3_enabled():
        return copy.deepcopy(model).eval()
    if not getattr(model, "name_or_path", None):
        raise ValueError("under DeepSpeed ZeRO-3 the reference model cannot be copied from a partitioned model: "
                         "pass ref_model=AutoModelForCausalLM.from_pretrained(...)")
    from sweet_agent.policies.checkpoints import adapter_dir, load_causal_lm

    if adapter_dir(model.name_or_path) is not None:
        return load_causal_lm(model.name_or_path, dtype=model.dtype,
                              attn_implementation=model.config._attn_implementation).eval()
    return type(model).from_pretrained(model.name_or_path, dtype=model.dtype,
                                       attn_implementation=model.config._attn_implementation).eval()


def attention_implementation(spec: str) -> str:
    """``auto``: FlashAttention-2 when ``flash_attn`` is installed and a GPU is present, else
    PyTorch's ``sdpa``. ``flash_attention_2`` without the package: a one-line error."""
    import importlib.util

    import torch

    has_flash = importlib.util.find_spec("flash_attn") is not None and torch.cuda.is_available()
    if spec == "auto":
        return "flash_attention_2" if has_flash else "sdpa"
    if spec == "flash_attention_2" and not has_flash:
        raise SystemExit("--attn_implementation flash_attention_2 needs a GPU and `pip install flash-attn "
                         "--no-build-isolation`; use sdpa (or auto) otherwise")
    return spec


def peft_config(model_args):
    """TRL's LoRA config from ``ModelConfig`` (``None`` without ``--use_peft``)."""
    from trl import get_peft_config

    return get_peft_config(model_args)


def last_checkpoint(output_dir: str) -> str | None:
    """The newest *complete* ``checkpoint-N`` in ``output_dir``. The Trainer writes a checkpoint
    in place and ``trainer_state.json`` last, so a run killed while saving (Ctrl-C, SIGTERM,
    SIGKILL) leaves a folder without it: skipped, so ``--resume_from_checkpoint last`` resumes
    from the previous finished checkpoint instead of failing on the torn one."""
    import re

    if not os.path.isdir(output_dir):
        return None
    steps = []
    for name in os.listdir(output_dir):
        m = re.fullmatch(r"checkpoint-(\d+)", name)
        path = os.path.join(output_dir, name)
        if m and os.path.isfile(os.path.join(path, "trainer_state.json")):
            steps.append((int(m.group(1)), path))
    return max(steps)[1] if steps else None


def resume_checkpoint(cfg) -> str | None:
    """``--resume_from_checkpoint``: a path, or ``last``/``true`` for the newest checkpoint in
    ``--output_dir`` (none yet: start afresh)."""
    spec = cfg.resume_from_checkpoint
    if spec is None or str(spec).lower() in ("", "false", "none"):
        return None
    if str(spec).lower() in ("last", "true"):
        return last_checkpoint(cfg.output_dir)
    return str(spec)


def save_final(trainer, tokenizer, output_dir: str, model_args=None, merge: bool = True) -> None:
    """Save a plain checkpoint the next stage loads like any model, through the trainer's own
    saving path (which gathers ZeRO-3-partitioned weights). A LoRA run saves its adapter that way
    (in ``adapter/``), then the main process merges it into a fresh copy of the base model; with
    ``merge=False`` (``--merge_adapter false``) the adapter and the tokenizer are all it saves,
    which every loader accepts (:mod:`sweet_agent.policies.checkpoints`)."""
    from sweet_agent.policies.checkpoints import ADAPTER_SUBDIR, load_causal_lm, remove_plain_model

    summary = distributed_summary(trainer)
    if summary:
        print(f"[save] {summary}; saving the final model to {output_dir}", flush=True)
    model = trainer.accelerator.unwrap_model(trainer.model)
    if not hasattr(model, "merge_and_unload"):
        if not merge and trainer.accelerator.is_main_process:
            print("[save] note: --merge_adapter false applies to LoRA runs (--use_peft); this run trained every "
                  "weight, so it saves the whole model", flush=True)
        trainer.save_model(output_dir)
        return
    adapter_dir = os.path.join(output_dir, ADAPTER_SUBDIR)
    trainer.save_model(adapter_dir)
    trainer.accelerator.wait_for_everyone()
    if not merge:
        if trainer.accelerator.is_main_process:
            tokenizer.save_pretrained(adapter_dir)
            remove_plain_model(output_dir)  # a merged model left from an earlier run would shadow the adapter
        trainer.accelerator.wait_for_everyone()
        return
    if trainer.accelerator.is_main_process:
        import torch
        from peft import PeftModel

        if model_args is not None:
            base_path = resolve_model(model_args.model_name_or_path)
        else:
            base_path = model.peft_config["default"].base_model_name_or_path
        dtype = next(model.parameters()).dtype if model_args is None else model_args.dtype
        dtype = getattr(torch, dtype) if isinstance(dtype, str) and dtype != "auto" else dtype
        base = load_causal_lm(base_path, dtype=dtype)
        merged = PeftModel.from_pretrained(base, adapter_dir).merge_and_unload()
        merged.save_pretrained(output_dir)
        tokenizer.save_pretrained(output_dir)
    trainer.accelerator.wait_for_everyone()


# ----------------------------------------------------------------------------- files
write_jsonl = write_jsonl_atomic  # atomic: temp file, fsync, os.replace


def write_json(path: str | Path, obj: Any) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
