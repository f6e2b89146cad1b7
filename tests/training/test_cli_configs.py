"""The training commands' command lines are their config dataclasses (TRL's TrlParser): every
field is a flag, the CLI's defaults are the dataclasses', shipped presets parse, and the flags of
earlier releases still work and say what replaced them."""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path

import pytest
import yaml

from sweet_agent.cli import COMMANDS
from sweet_agent.training.flags import RENAMED_FLAGS
from sweet_agent.training.parser import make_parser, parse_command
from sweet_agent.training.presets import PRESETS_DIR

MINE = ("train-critic", "train-actor", "train-rft", "train-mtdpo")  # train-grpo has its own tests
TRAINING = [(words[0], module) for words, module, _ in COMMANDS if words[0] in MINE]


def _module(name: str):
    return importlib.import_module(name)


def test_every_training_command_is_dataclass_parsed():
    assert {c for c, _ in TRAINING} == set(MINE)
    for command, name in TRAINING:
        module = _module(name)
        types = module.dataclass_types()
        assert types[-1].__name__ == "ModelConfig" and types[-1].__module__.startswith("trl")
        args = module.parse_args(["--output_dir", "o", "--learning_rate", "0.25"], prog=command)
        assert (args.training.learning_rate, args.training.output_dir) == (0.25, "o")
        assert type(args.script) is types[0] and type(args.model) is types[2]


@pytest.mark.parametrize("command,module_name", TRAINING)
def test_every_field_is_a_flag_and_defaults_match(command, module_name):
    module = _module(module_name)
    types = module.dataclass_types()
    parser = make_parser(command, types)
    options = {opt for action in parser._actions for opt in action.option_strings}
    parsed = parser.parse_args_and_config([])
    for cls, got in zip(types, parsed):
        default = cls()
        for f in dataclasses.fields(cls):
            if not f.init:
                continue
            assert f"--{f.name}" in options, f"{command}: {cls.__name__}.{f.name} has no flag"
            assert getattr(got, f.name) == getattr(default, f.name), (
                f"{command}: CLI default of --{f.name} is {getattr(got, f.name)!r}, "
                f"{cls.__name__} says {getattr(default, f.name)!r}")


def test_critic_defaults_are_declared_once():
    """The drift the issue names: train-critic said lr 2e-7 / batch 8 while CriticConfig said 1e-6 / 2."""
    from sweet_agent.critic.cli import dataclass_types
    from sweet_agent.critic.config import CriticConfig

    _, cfg, _ = parse_command("t", "critic", dataclass_types(), ["--output_dir", "x"])
    assert cfg.learning_rate == CriticConfig.learning_rate == 1e-4
    assert cfg.per_device_train_batch_size == CriticConfig.per_device_train_batch_size


@pytest.mark.parametrize("command,module_name", TRAINING)
@pytest.mark.parametrize("preset", ["cpu", "paper"])
def test_shipped_presets_parse_and_set_values(command, module_name, preset):
    module = _module(module_name)
    path = PRESETS_DIR / module.PRESETS / f"{preset}.yaml"
    assert path.is_file()
    values = yaml.safe_load(path.read_text())
    parsed = parse_command(command, module.PRESETS, module.dataclass_types(), ["--config", preset, "--output_dir", "o"])
    merged = {f.name: getattr(obj, f.name) for obj in parsed for f in dataclasses.fields(obj) if f.init}
    for key, value in values.items():
        got = merged[key]
        if key == "lora_target_modules":
            got = got if isinstance(got, str) else " ".join(got)
        assert got == value or (isinstance(value, float) and got == pytest.approx(value)), (key, got, value)
    # flags override the preset
    parsed = parse_command(command, module.PRESETS, module.dataclass_types(),
                           ["--config", preset, "--learning_rate", "0.125", "--output_dir", "o"])
    assert parsed[1].learning_rate == 0.125


def test_paper_presets_carry_the_paper_values():
    from sweet_agent.actor.cli import dataclass_types as actor_types
    from sweet_agent.critic.cli import dataclass_types as critic_types

    _, critic, model = parse_command("t", "critic", critic_types(), ["--config", "paper", "--output_dir", "o"])
    assert (critic.learning_rate, critic.num_train_epochs, critic.beta) == (2e-7, 4, 0.1)
    assert model.attn_implementation == "auto" and critic.gradient_checkpointing is True
    _, actor, _ = parse_command("t", "actor", actor_types(), ["--config", "paper", "--output_dir", "o"])
    assert (actor.learning_rate, actor.num_candidates, actor.max_new_tokens) == (2e-7, 16, 1024)
    assert actor.loss_weights == [1.0, 0.01] and actor.gradient_checkpointing is True
    _, cpu_actor, cpu_model = parse_command("t", "actor", actor_types(), ["--config", "cpu", "--output_dir", "o"])
    assert cpu_actor.learning_rate == 5e-5 and cpu_model.use_peft and cpu_actor.gradient_checkpointing is False


def test_config_names_a_missing_preset(capsys):
    from sweet_agent.critic.cli import dataclass_types

    with pytest.raises(SystemExit, match="no shipped preset of that name.*cpu, paper"):
        parse_command("sweet-agent train-critic", "critic", dataclass_types(), ["--config", "gpu"])


def test_config_file_path(tmp_path):
    from sweet_agent.baselines.rft import dataclass_types

    p = tmp_path / "mine.yaml"
    p.write_text("learning_rate: 3.0e-3\npair_rule: top-bottom\n")
    data, cfg, _ = parse_command("t", "rft", dataclass_types(), ["--config", str(p), "--output_dir", "o"])
    assert cfg.learning_rate == 3e-3 and data.pair_rule == "top-bottom"


OLD_FLAGS = [
    (["--model", "m"], lambda d, c, m: m.model_name_or_path == "m"),
    (["--epochs", "3"], lambda d, c, m: c.num_train_epochs == 3),
    (["--batch-size", "5"], lambda d, c, m: c.per_device_train_batch_size == c.per_device_eval_batch_size == 5),
    (["--grad-accum", "4"], lambda d, c, m: c.gradient_accumulation_steps == 4),
    (["--resume"], lambda d, c, m: c.resume_from_checkpoint == "last"),
    (["--lora-r", "4"], lambda d, c, m: m.use_peft and m.lora_r == 4 and m.lora_alpha == 8
     and m.lora_target_modules in ("all-linear", ["all-linear"]) and m.lora_dropout == 0),
    (["--sft-weight", "0.5"], lambda d, c, m: c.loss_weights == [1.0, 0.5]),
    (["--no-privileged-info"], lambda d, c, m: c.use_privileged_info is False),
]


@pytest.mark.parametrize("argv,check", OLD_FLAGS, ids=[a[0] for a, _ in OLD_FLAGS])
def test_renamed_flags_still_work_and_say_so(argv, check, capsys):
    from sweet_agent.actor.cli import dataclass_types as actor_types
    from sweet_agent.critic.cli import dataclass_types as critic_types

    critic = argv[0] in ("--no-privileged-info", "--resume")  # train-actor's --resume is its own flag (next test)
    types, presets = (critic_types(), "critic") if critic else (actor_types(), "actor")
    parsed = parse_command("sweet-agent train-x", presets, types, [*argv, "--output-dir", "o"])
    assert check(*parsed)
    new = RENAMED_FLAGS[argv[0]][2]
    assert f"sweet-agent train-x: {argv[0]} is deprecated; use {new}" in capsys.readouterr().err


def test_a_command_s_own_resume_flag_is_not_rewritten(capsys):
    """train-actor defines ``--resume`` (continue the step-pair journal; training resumes too, see
    ``run``): it reaches the command's own field, silently, instead of becoming the old spelling."""
    from sweet_agent.actor.cli import dataclass_types as actor_types

    data, cfg, _ = parse_command("sweet-agent train-actor", "actor", actor_types(), ["--resume", "--output-dir", "o"])
    assert data.resume is True and cfg.resume_from_checkpoint is None
    assert "deprecated" not in capsys.readouterr().err
    from sweet_agent.actor.cli import resume_training_too

    resume_training_too(data, cfg)
    assert cfg.resume_from_checkpoint == "last"  # the training resumes too
    data, cfg, _ = parse_command("t", "actor", actor_types(), ["--resume", "--resume_from_checkpoint", "c/x",
                                                                 "--output-dir", "o"])
    resume_training_too(data, cfg)
    assert cfg.resume_from_checkpoint == "c/x"  # an explicit checkpoint wins
    data, cfg, _ = parse_command("t", "actor", actor_types(), ["--output-dir", "o"])
    resume_training_too(data, cfg)
    assert cfg.resume_from_checkpoint is None


def test_current_hyphen_spellings_are_silent(capsys):
    from sweet_agent.critic.cli import dataclass_types

    _, cfg, _ = parse_command("t", "critic", dataclass_types(),
                              ["--learning-rate", "0.5", "--max-length", "99", "--save-steps", "3", "--output-dir", "o"])
    assert (cfg.learning_rate, cfg.max_length, cfg.save_steps, cfg.save_strategy) == (0.5, 99, 3, "steps")
    assert "deprecated" not in capsys.readouterr().err


LOGGERS = ("trackio", "tensorboard", "wandb")


def test_report_to_accepts_trackio_tensorboard_wandb():
    from sweet_agent.critic.cli import dataclass_types

    for logger in LOGGERS:
        _, cfg, _ = parse_command("t", "critic", dataclass_types(), ["--report_to", logger, "--output_dir", "o"])
        assert cfg.report_to == [logger]


@pytest.mark.parametrize("command", ["train-critic", "train-rft", "train-mtdpo"])
def test_report_to_reaches_the_trainers_callbacks(command, tmp_path, tiny_model_dir, toy_records, monkeypatch):
    """--report_to trackio tensorboard wandb: the trainer the command builds carries each logger's
    callback, and each one sees the run begin and its loss logged. The loggers' packages need not be
    installed: each integration's callback is replaced by a recorder (its own real class would
    import the package), and the package check before training (tested above) is lifted."""
    import json

    from transformers import TrainerCallback
    from transformers.integrations import integration_utils

    from sweet_agent.cli import main
    from sweet_agent.training import command as training_command

    made: list[TrainerCallback] = []

    class Recorder(TrainerCallback):
        def __init__(self):
            self.events: list[str] = []
            made.append(self)

        def on_train_begin(self, args, state, control, **kwargs):
            self.events.append("begin")

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                self.events.append("loss")

    recorders = {name: type(f"{name}_recorder", (Recorder,), {}) for name in LOGGERS}
    for name, cls in recorders.items():
        monkeypatch.setitem(integration_utils.INTEGRATION_TO_CALLBACK, name, cls)
    monkeypatch.setattr(training_command, "_TRACKERS", {})
    data = tmp_path / "trajs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in toy_records))
    config = tmp_path / "loggers.yaml"  # the flag takes one logger; a config file takes the list
    config.write_text(yaml.safe_dump({"report_to": list(LOGGERS)}))
    assert main([command, "--config", str(config), "--data", str(data), "--model_name_or_path", str(tiny_model_dir),
                 "--output_dir", str(tmp_path / "out"), "--max_steps", "1", "--logging_steps", "1",
                 "--per_device_train_batch_size", "2", "--max_length", "256"]) == 0
    assert sorted(type(cb).__name__ for cb in made) == sorted(f"{n}_recorder" for n in LOGGERS)
    assert all(cb.events[:1] == ["begin"] and "loss" in cb.events for cb in made), [cb.events for cb in made]


def test_report_to_a_missing_logger_is_one_line(tmp_path):
    import importlib.util

    from sweet_agent.training.command import check_report_to

    missing = [n for n in ("trackio", "wandb") if importlib.util.find_spec(n) is None]
    if not missing:
        pytest.skip("trackio and wandb are both installed here")
    with pytest.raises(SystemExit, match=f"--report_to {missing[0]} needs the '{missing[0]}' package; `pip install"):
        check_report_to("t", [missing[0]])


def test_no_output_dir_is_one_line(tmp_path):
    from sweet_agent.cli import main

    with pytest.raises(SystemExit, match="--output_dir is required"):
        main(["train-rft", "--data", str(tmp_path / "x.jsonl")])


def test_help_lists_config_flags(capsys):
    from sweet_agent.cli import main

    with pytest.raises(SystemExit):
        main(["train-critic", "--help"])
    out = capsys.readouterr().out
    for flag in ("--config", "--pair_rule", "--use_privileged_info", "--critic_type", "--learning_rate", "--use_peft"):
        assert flag in out
    assert out.startswith("usage: sweet-agent train-critic [--config cpu|paper|FILE.yaml]")


def test_presets_ship_as_package_data(tmp_path):
    """Build the wheel (from a copy of the sources, offline, no dependencies) and list its YAML files:
    every preset and launch config of sweet_agent/configs is in it, at the same path."""
    import shutil
    import subprocess
    import sys
    import zipfile

    root = Path(__file__).resolve().parents[2]
    text = (root / "pyproject.toml").read_text()
    assert '"configs/*/*.yaml"' in text
    src = tmp_path / "src"  # a copy: building in the working tree would leave build/ and egg-info behind
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(root / name, src / name)
    for package in ("colbench_gym", "sweet_agent"):
        shutil.copytree(root / package, src / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                           "-q", "-w", str(tmp_path / "dist"), str(src)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    (wheel,) = (tmp_path / "dist").glob("colbench_gym-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        shipped = sorted(n for n in zf.namelist() if n.endswith((".yaml", ".yml")))
    expected = sorted(p.relative_to(root).as_posix() for p in (root / "sweet_agent" / "configs").rglob("*.y*ml"))
    assert shipped == expected
    assert {f"sweet_agent/configs/{d}/{preset}.yaml" for d in ("critic", "actor", "rft", "mtdpo", "grpo")
            for preset in ("cpu", "paper")} <= set(shipped)
