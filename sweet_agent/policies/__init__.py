"""Agent policies behind one interface (:class:`Policy`): local transformers models and
OpenAI-compatible endpoints. :func:`load_policy` turns a ``--policy`` spec into one.

Nothing heavy is imported here: torch/transformers load only when a local model is built.
"""

from __future__ import annotations

import os
from typing import Any

from sweet_agent.policies.base import (
    ContextExhausted,
    EndpointError,
    Generation,
    Messages,
    Policy,
    PolicyError,
    SamplingParams,
)

OPENAI_PREFIX = "openai:"


def load_policy(spec: str | os.PathLike[str] | Policy | None = None, *, base_url: str | None = None,
                api_key: str | None = None, dtype: str = "bfloat16", device: str = "auto",
                max_batch_size: int = 8, concurrency: int = 64, quiet: bool = False, **kwargs: Any) -> Policy:
    """Build a policy from a spec.

    - ``None`` / ``"default"``: the embedded default model (Qwen2.5-Coder-0.5B-Instruct);
    - ``"openai:MODEL"``: an OpenAI-compatible endpoint at ``base_url`` (or ``$OPENAI_BASE_URL``);
    - anything else: a local checkpoint path, ``.gguf`` file or (cached) hub id.
    """
    if isinstance(spec, Policy):
        return spec
    text = "default" if spec is None else os.fspath(spec)
    if text.startswith(OPENAI_PREFIX):
        from sweet_agent.policies.openai_policy import OpenAIPolicy

        return OpenAIPolicy(text[len(OPENAI_PREFIX):], base_url=base_url, api_key=api_key,
                            concurrency=concurrency, **kwargs)
    from sweet_agent.policies.transformers_policy import TransformersPolicy

    return TransformersPolicy.from_pretrained(text, dtype=dtype, device=device, max_batch_size=max_batch_size,
                                              quiet=quiet, **kwargs)


# the interface and the loader; helpers such as derive_seed are imported from policies.base where used
__all__ = ["ContextExhausted", "EndpointError", "Generation", "Messages", "Policy", "PolicyError", "SamplingParams", "load_policy"]
