"""The skeleton of every ``sweet-agent train-*`` command (:class:`TrainingCommand`) and the
one-line stops a command makes before training (a missing logger, no data, nothing to train).

WHY a module of its own: TRL's script pattern (parse the dataclasses, load the model, build the
trainer, train, save) is written once here; a command module declares one
:class:`TrainingCommand` and writes only what is its own (its rows and its trainer).

A command is ``(data arguments, its config dataclass, trl.ModelConfig)`` parsed by ``TrlParser``
(:mod:`sweet_agent.training.parser`), so every config field is a flag (``--learning_rate`` or
``--learning-rate``), ``--config preset.yaml`` (or a shipped preset name, ``--config cpu``) sets
defaults and flags override it.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, NoReturn

from sweet_agent.training import models
from sweet_agent.training.budget import record_budget
from sweet_agent.training.parser import parse_command
from sweet_agent.training.saving import resume_checkpoint, save_final

#: Exit status of a stage that found nothing to train on (after a one-line message).
NOTHING_TO_TRAIN = 3


@dataclass(frozen=True)
class TrainingCommand:
    """One ``sweet-agent train-*`` command, TRL's script pattern written once: its name, its
    preset folder (``sweet_agent/configs/<presets>/``) and its dataclasses ``(script arguments,
    config, trl.ModelConfig)``, every field a flag. A command module declares one, exposes its
    ``dataclass_types`` and ``parse_args`` (what the ``sweet-agent`` dispatcher calls), and writes
    only what is its own in ``run`` (the rows, the trainer) between :meth:`read_records` and
    :meth:`train_policy` / :meth:`train_and_save`.

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
        presets and renamed flags: :func:`~sweet_agent.training.parser.parse_command`)."""
        script, training, model = parse_command(prog or self.prog, self.presets, self.dataclass_types(), argv,
                                                description or self.description, self.require_output_dir)
        return SimpleNamespace(script=script, training=training, model=model)

    def start(self, args) -> tuple[Any, Any, Any, list[dict[str, Any]]]:
        """What a trainer's ``run`` begins with: its parsed ``(script, training, model)`` arguments,
        the settings every command needs checked (:func:`check_run`), and the validated
        trajectories of ``--data``."""
        check_run(self.prog, args.training)
        return args.script, args.training, args.model, self.read_records(args.script)

    def read_records(self, data_args) -> list[dict[str, Any]]:
        """The validated trajectories of ``--data`` (required)."""
        from sweet_agent.training_data.records import load_records

        return load_records(require_data(self.prog, data_args.data))

    def train_policy(self, make_trainer: Callable[..., Any], rows, cfg, model_args, model=None,
                     tokenizer=None, merge: bool = True) -> None:
        """Load ``--model_name_or_path`` (unless ``model`` and ``tokenizer`` are given), build its
        trainer on ``rows`` (``make_trainer(model, tokenizer, rows, cfg, peft_config=...)``, LoRA
        with ``--use_peft``), then :meth:`train_and_save`."""
        if model is None:
            model, tokenizer = models.load_model(model_args)
        trainer = make_trainer(model, tokenizer, rows, cfg, peft_config=models.peft_config(model_args))
        self.train_and_save(trainer, tokenizer, cfg, model_args, merge)

    def train_and_save(self, trainer, tokenizer, cfg, model_args, merge: bool = True) -> None:
        """Train (resuming from ``--resume_from_checkpoint``, if any) and save the final model
        where the next stage loads it (:func:`save_final`; ``merge=False``: the LoRA adapter alone)."""
        trainer.train(resume_from_checkpoint=resume_checkpoint(cfg))
        save_final(trainer, tokenizer, cfg.output_dir, model_args, merge=merge)
        if self.unit:
            record_budget(trainer, self.name, self.unit, cfg.output_dir)
        print(f"[{self.name}] saved to {cfg.output_dir}")


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
    """``--data``, or a one-line error naming the command that writes it."""
    if not data:
        raise SystemExit(f"{prog}: --data is required (trajectory JSONL file(s) from `sweet-agent rollout`)")
    return data
