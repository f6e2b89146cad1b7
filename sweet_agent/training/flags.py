"""Flags of earlier releases (``--model``, ``--epochs``, ``--lora-r``, ...), rewritten into the
current TRL-style ones before parsing.

WHY a module of its own: scripts and notes written for earlier releases keep working, and each
old flag says once what replaced it; the table is the one list of what was renamed.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Sequence


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


def renamed_for(dataclass_types: Sequence[type]) -> dict:
    """The renamed-flag table without the flags a command defines itself: ``train-actor``'s own
    ``--resume`` (continue the step-pair journal) is that command's flag, not the old spelling of
    ``--resume_from_checkpoint last``, and must reach it."""
    own = {f"--{f.name}" for cls in dataclass_types if dataclasses.is_dataclass(cls) for f in dataclasses.fields(cls)}
    return {flag: rule for flag, rule in RENAMED_FLAGS.items() if flag not in own}


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
