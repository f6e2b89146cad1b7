"""What a finished run's optimizer saw, written beside the model (``training_budget.json``).

WHY a module of its own: methods are compared at equal budgets, so the budget is computed the
same way for every trainer, from the trainer's own state, and not from what a command asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sweet_agent.training.files import write_json

#: Written beside every trained model: what the run's optimizer saw (:func:`training_budget`).
BUDGET_FILE = "training_budget.json"
#: Written beside it: the trainer's own log (``trainer.state.log_history``: loss and, for DPO,
#: TRL's ``rewards/*`` and ``logps/*`` of every logged step), which otherwise lives only in the
#: checkpoints. WHY: a report reads from it what the optimizer did to its pairs (did the chosen
#: turns become likelier, or only the rejected ones less likely?) after the checkpoints are gone.
TRAINING_LOG_FILE = "training_log.json"


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
            "learning_rate": float(args.learning_rate),
            # the arithmetic the steps ran in: a budget in epochs is only comparable at the same precision
            "precision": "bf16" if args.bf16 else "fp16" if args.fp16 else "fp32"}


def record_budget(trainer, name: str, unit: str, output_dir: str) -> dict[str, Any]:
    """Print the run's budget (:func:`training_budget`) and write it to ``OUTPUT_DIR/training_budget.json``,
    and the trainer's log to ``OUTPUT_DIR/training_log.json`` (on the main process)."""
    budget = {"command": name, **training_budget(trainer, unit)}
    if trainer.accelerator.is_main_process:
        write_json(Path(output_dir) / BUDGET_FILE, budget)
        write_json(Path(output_dir) / TRAINING_LOG_FILE,
                   {"command": name, "log_history": list(trainer.state.log_history)})
        print(f"[{name}] budget: {budget['samples_seen']} {unit} seen = {budget['epochs']:.2f} epochs of "
              f"{budget['train_rows']}, in {budget['optimizer_steps']} optimizer steps (batch "
              f"{budget['per_device_train_batch_size']} x accumulation {budget['gradient_accumulation_steps']} x "
              f"{budget['processes']} process(es), learning rate {budget['learning_rate']:g}) -> "
              f"{Path(output_dir) / BUDGET_FILE}", flush=True)
    return budget
