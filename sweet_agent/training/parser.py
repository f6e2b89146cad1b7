"""The command line of every training command: TRL's ``TrlParser`` over the command's
dataclasses ``(script arguments, config, trl.ModelConfig)``, presets, renamed flags, and a help
that starts with the presets and the command's own flags.

WHY a module of its own: the commands differ only in their dataclasses and preset folder; how a
command line becomes those dataclasses (every field a flag, ``--config`` presets, old flags) and
what ``--help`` shows is the same for all of them, train-grpo included.

``--help`` shows the presets, the command's own fields (its script arguments and what its config
adds to TRL's) and the library flags a run most often sets; ``--help-all`` shows every flag,
grouped by where it comes from (the hundreds of ``transformers.TrainingArguments`` fields, TRL's
config, ``trl.ModelConfig``). A field's help names its default once.
"""

from __future__ import annotations

import argparse
import dataclasses
import textwrap
from collections.abc import Sequence
from typing import Any

from sweet_agent.training.flags import renamed_for, translate_flags
from sweet_agent.training.presets import resolve_config, shipped_presets

#: Library flags a run most often sets, shown by ``--help`` beside the command's own.
COMMON_FLAGS = ("output_dir", "model_name_or_path", "dtype", "use_peft", "lora_r", "num_train_epochs", "max_steps",
                "per_device_train_batch_size", "gradient_accumulation_steps", "learning_rate", "seed",
                "resume_from_checkpoint", "report_to", "use_cpu")

HELP_ALL = "--help-all"


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """The description as written (the presets table), one spelling per flag (``--learning_rate``;
    the hyphenated twin is said once, in the epilog), and ``(default: x)`` only where the help
    does not already say what the default is and there is one (``None`` says nothing)."""

    def _get_help_string(self, action):
        text = action.help or ""
        if (not text or "(default" in text or "%(default)" in text or action.default in (None, argparse.SUPPRESS)
                or not action.option_strings or isinstance(action, argparse._StoreFalseAction)):
            return text
        return text + " (default: %(default)s)"

    def _format_action_invocation(self, action):
        spelled = action.option_strings
        if len(spelled) > 1:
            action = _with_options(action, [s for s in spelled if "-" not in s[2:]] or spelled[:1])
        return super()._format_action_invocation(action)


def _with_options(action, options):
    clone = argparse.Action.__new__(type(action))
    clone.__dict__.update(action.__dict__, option_strings=options)
    return clone


class _HelpAll(argparse.Action):
    """``--help-all``: every flag's help, grouped, then exit."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        for action in parser._actions:
            if hasattr(action, "full_help"):
                action.help = action.full_help
        parser.epilog = parser.full_epilog
        parser.print_help()
        parser.exit()


def own_fields(cls: type) -> set[str]:
    """The fields this project's classes declare in ``cls``'s hierarchy: all of a class of its own,
    what a config derived from TRL's adds or changes (its defaults) for the rest."""
    return {name for k in cls.__mro__ if k.__module__.startswith("sweet_agent")
            for name in vars(k).get("__annotations__", {})}


def _inherited_help(cls: type, name: str) -> str | None:
    """The help of field ``name`` in the nearest base of ``cls`` that gives one: a config that
    only changes a library field's default redeclares it without its help."""
    for k in cls.__mro__:
        f = getattr(k, "__dataclass_fields__", {}).get(name)
        if f is not None and f.metadata.get("help"):
            return f.metadata["help"]
    return None


def _move(parser, action, group) -> None:
    for g in parser._action_groups:
        if action in g._group_actions:
            g._group_actions.remove(action)
    group._group_actions.append(action)


def make_parser(prog: str, dataclass_types: Sequence[type], description: str | None = None,
                preset_dir: str | None = None):
    """TRL's ``TrlParser`` over the command's dataclasses (every field a flag; no abbreviations),
    with the presets of ``preset_dir`` first in its help (see the module's docstring)."""
    from trl import TrlParser

    presets = shipped_presets(preset_dir) if preset_dir else {}
    choices = "|".join([*presets, "FILE.yaml"])
    width = max((len(n) for n in presets), default=0)
    top = (f"--config {choices}: a preset whose values become the defaults; flags override it.\n"
           + "".join(f"  {name:<{width}}  {line}\n" for name, line in presets.items())
           + (f"  (shipped in sweet_agent/configs/{preset_dir}/)\n" if presets else ""))
    parser = TrlParser(list(dataclass_types), prog=prog, usage=f"%(prog)s [--config {choices}] [--FLAG VALUE ...]",
                       description=top + (f"\n{description.strip()}" if description else ""),
                       formatter_class=HelpFormatter, allow_abbrev=False)
    script, config, *rest = list(dataclass_types) + [None, None]
    field_of = {f.name: cls for cls in dataclass_types for f in dataclasses.fields(cls) if f.init}
    own = own_fields(config) if config is not None else set()
    groups = [parser.add_argument_group("presets"),
              parser.add_argument_group(f"what it reads ({script.__name__})") if script else None,
              parser.add_argument_group(f"training ({config.__name__}: what it adds to or changes in the library's)")
              if config else None,
              parser.add_argument_group("settings a run most often changes (trl, transformers)"),
              parser.add_argument_group("every other flag (transformers TrainingArguments, TRL's config, "
                                        "trl.ModelConfig)")]
    groups[0].add_argument("--config", default=argparse.SUPPRESS, metavar=choices,
                           help="preset or YAML file of flag values (see the top of this help)")
    hidden = 0
    for action in list(parser._actions):
        cls = field_of.get(action.dest)
        if cls is None or action.dest == "config":
            continue
        if cls is script:
            group = groups[1]
        elif cls is config and action.dest in own:
            group = groups[2]
        elif action.dest in COMMON_FLAGS:
            group = groups[3]
        else:
            group = groups[4]
        _move(parser, action, group)
        if not action.help:
            action.help = _inherited_help(cls, action.dest) or (
                "(default: %(default)s)" if action.default is not None else None)
        negation = isinstance(action, argparse._StoreFalseAction) and action.option_strings[0].startswith("--no_")
        if negation:
            action.help = f"same as {action.option_strings[0].replace('--no_', '--', 1)} false"
        if group is groups[4] or negation:
            action.full_help, action.help = action.help, argparse.SUPPRESS
            hidden += group is groups[4] and not negation
    parser.add_argument(HELP_ALL, action=_HelpAll, help="show every flag, grouped, and exit")
    common = ("Every flag is also spelled with hyphens (--learning-rate). Flags of earlier releases (--model, "
              "--epochs, --batch-size, --grad-accum, --lora-r, --resume, ...) still work and print their replacement.")
    parser.full_epilog = textwrap.fill(common, 80)
    parser.epilog = textwrap.fill(f"{hidden} more flags of the libraries are not shown: {HELP_ALL} lists them. "
                                  f"{common}", 80)
    return parser


def parse_command(prog: str, preset_dir: str, dataclass_types: Sequence[type], argv: Sequence[str],
                  description: str | None = None, require_output_dir: bool = True) -> tuple[Any, ...]:
    """Parse ``argv`` into instances of ``dataclass_types`` the way TRL's scripts do.

    ``--config NAME`` with a shipped preset name (see ``sweet_agent/configs/<preset_dir>/``) reads
    that preset; any other value is a YAML path. Command-line flags override the preset.
    """
    args = resolve_config(prog, preset_dir, translate_flags(argv, prog, renamed_for(dataclass_types)))
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


