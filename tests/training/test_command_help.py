"""``sweet-agent train-* --help``: the presets come first, each flag's default is named once, the
libraries' hundreds of flags wait for ``--help-all``, and ``--config PRESET --help`` shows the
preset's values as the defaults (sweet_agent/training/parser.py)."""

from __future__ import annotations

import re

import pytest
import yaml

from sweet_agent.cli import main
from sweet_agent.training.presets import PRESETS_DIR, shipped_presets

COMMANDS = {"train-critic": "critic", "train-actor": "actor", "train-rft": "rft", "train-mtdpo": "mtdpo",
            "train-grpo": "grpo"}
OWN_FLAG = {"train-critic": "--use_privileged_info", "train-actor": "--num_candidates", "train-rft": "--pair_rule",
            "train-mtdpo": "--pair_rule", "train-grpo": "--critic_weight"}


def _help(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as stop:
        main(list(argv))
    assert stop.value.code in (0, None)
    return capsys.readouterr().out


def _entries(text: str) -> list[str]:
    """One string per flag of a help text (its invocation and its whole help, lines joined)."""
    return [" ".join(chunk.split("\n\n")[0].split()) for chunk in re.split(r"\n  (?=-)", text)[1:]]


@pytest.mark.parametrize("command", COMMANDS)
def test_help_starts_with_the_presets(command, capsys):
    out = _help(capsys, command, "--help")
    head = out.splitlines()[:6]
    presets = shipped_presets(COMMANDS[command])
    assert set(presets) >= {"cpu", "paper"}
    assert head[0].startswith(f"usage: sweet-agent {command} [--config {'|'.join(presets)}|FILE.yaml]")
    for name, line in presets.items():
        assert line and any(row.split() == [name, *line.split()] for row in head), (name, head)
    assert f"sweet_agent/configs/{COMMANDS[command]}/" in "\n".join(head)


@pytest.mark.parametrize("command", COMMANDS)
def test_help_is_short_and_help_all_has_every_flag(command, capsys):
    short = _help(capsys, command, "--help")
    full = _help(capsys, command, "--help-all")
    short_flags = {e.split()[0] for e in _entries(short)}
    full_flags = {e.split()[0] for e in _entries(full)}
    assert OWN_FLAG[command] in short_flags and "--output_dir" in short_flags and "--learning_rate" in short_flags
    assert "--adam_beta1" in full_flags - short_flags and "--lora_alpha" in full_flags - short_flags
    assert 3 * len(short.splitlines()) < len(full.splitlines())
    # the epilog counts what --help leaves out (the library's flags; the --no_X negations aside)
    hidden = {f for f in full_flags - short_flags if not f.startswith("--no_")}
    stated = re.search(r"(\d+) more flags of the libraries are not shown: --help-all lists them", " ".join(short.split()))
    assert stated and int(stated.group(1)) == len(hidden)
    # one spelling per flag in the help; the hyphenated one still parses (tests/training/test_cli_configs.py)
    assert "--learning-rate LEARNING_RATE" not in full and "--learning_rate LEARNING_RATE" in full


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("view", ["--help", "--help-all"])
def test_no_flag_names_its_default_twice(command, view, capsys):
    entries = _entries(_help(capsys, command, view))
    assert entries
    doubled = [e for e in entries if e.count("(default:") > 1]
    assert not doubled, doubled[:3]
    # a help that says its own default keeps its words, not "(default: None)" after them
    if command != "train-grpo":
        (prompt,) = [e for e in entries if e.startswith("--system_prompt ")]
        assert prompt.endswith("(default: the one each record's meta carries)")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_shipped_preset_sets_the_defaults_help_shows(command, capsys):
    preset = yaml.safe_load((PRESETS_DIR / COMMANDS[command] / "cpu.yaml").read_text())
    assert "learning_rate" in preset
    plain = {e.split()[0]: e for e in _entries(_help(capsys, command, "--help"))}
    with_preset = {e.split()[0]: e for e in _entries(_help(capsys, command, "--config", "cpu", "--help"))}
    shown = with_preset["--learning_rate"]
    assert shown.endswith(f"(default: {preset['learning_rate']})"), shown
    changed = [k for k in preset if f"--{k}" in plain and plain[f"--{k}"] != with_preset[f"--{k}"]]
    assert "learning_rate" in changed or "use_peft" in changed, changed
