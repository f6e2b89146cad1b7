"""The regression-head critic of the paper's ablation.

WHY it exists: SWEET-RL's point is that a critic parameterised as a log-ratio of the LM's own
token probabilities generalises better than a freshly initialised scalar head. To measure that,
the ablation keeps everything else (same backbone, same privileged input, same Bradley–Terry
loss on trajectory sums) and reads each turn's value from a linear head on the hidden state of
the turn's last token.
"""

from __future__ import annotations

import io
from pathlib import Path

import torch
from torch import nn

from colbench_gym.jsonl import write_bytes_atomic

HEAD_FILE = "value_head.pt"


class RegressionCritic(nn.Module):
    """A causal LM backbone plus a scalar value head read at the end of each agent turn."""

    #: Its forward gives per-turn values itself (no log-ratio against a reference): how
    #: :func:`sweet_agent.sweet_rl.algorithm.score_candidates` tells it from a log-ratio critic.
    reads_turn_values = True

    def __init__(self, lm: nn.Module):
        super().__init__()
        self.lm = lm
        hidden = lm.config.get_text_config().hidden_size
        self.value_head = nn.Linear(hidden, 1)
        nn.init.zeros_(self.value_head.weight)
        nn.init.zeros_(self.value_head.bias)
        self.config = lm.config

    def forward(self, input_ids, attention_mask, turn_ids, num_turns: int, **_: object) -> torch.Tensor:
        """Per-turn values ``[B, K]`` (0 for turns a row does not have)."""
        out = self.lm(input_ids=input_ids, attention_mask=attention_mask, use_cache=False,
                      output_hidden_states=True, logits_to_keep=1)
        hidden = out.hidden_states[-1]
        K = max(int(num_turns), 1)
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        values = []
        for k in range(1, K + 1):
            in_turn = turn_ids == k
            last = torch.where(in_turn, positions, torch.full_like(positions, -1)).max(dim=1).values
            h = hidden[torch.arange(hidden.shape[0], device=hidden.device), last.clamp(min=0)]
            v = self.value_head(h.to(self.value_head.weight.dtype)).squeeze(-1)
            values.append(v * (last >= 0).to(v.dtype))
        return torch.stack(values, dim=1)

    def save_pretrained(self, path: str | Path, **kwargs) -> None:
        path = Path(path)
        self.lm.save_pretrained(path, **kwargs)
        head = io.BytesIO()  # a few kB: serialised in memory, written whole (no torn head beside a saved backbone)
        torch.save(self.value_head.state_dict(), head)
        write_bytes_atomic(path / HEAD_FILE, head.getvalue())

    @classmethod
    def from_pretrained(cls, path: str | Path, **kwargs) -> RegressionCritic:
        from transformers import AutoModelForCausalLM

        path = Path(path)
        critic = cls(AutoModelForCausalLM.from_pretrained(path, **kwargs))
        critic.value_head.load_state_dict(torch.load(path / HEAD_FILE, map_location="cpu"))
        return critic
