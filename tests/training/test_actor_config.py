"""The actor's settings live in one module (issue 35): the step-pair stage's settings import
without trl, and ``ActorConfig`` (defined on first use) is those plus TRL's DPOConfig."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import fields


def test_the_step_pair_settings_import_without_trl():
    code = ("import sys; from sweet_agent.actor.config import StepPairConfig; import sweet_agent.actor.candidates; "
            "StepPairConfig(num_candidates=4); print(sorted(m for m in ('trl', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "trl" not in out, out


def test_actor_config_is_the_step_pair_settings_plus_dpo_with_the_papers_defaults(tmp_path):
    from trl import DPOConfig

    from sweet_agent.actor import config

    ActorConfig = config.ActorConfig
    assert ActorConfig is config.ActorConfig and issubclass(ActorConfig, (config.StepPairConfig, DPOConfig))
    names = {f.name for f in fields(ActorConfig)}
    assert {f.name for f in fields(config.StepPairConfig)} <= names and "beta" in names
    cfg = ActorConfig(output_dir=str(tmp_path), num_candidates=4, use_cpu=True)
    assert (cfg.num_candidates, cfg.beta, cfg.loss_weights, cfg.num_train_epochs) == (4, 0.1, [1.0, 0.01], 1.0)
    try:
        ActorConfig(output_dir=str(tmp_path), num_candidates=1, use_cpu=True)
    except ValueError as exc:
        assert "num_candidates must be >= 2" in str(exc)
    else:
        raise AssertionError("num_candidates=1 was accepted")
