"""A local Hugging Face causal LM as a policy: chat template, batched decoding, per-episode seeds.

Why the sampling is done by a logits processor rather than ``do_sample=True``: transformers
samples every row of a batch from one global RNG, so the text an episode gets would depend on
which other episodes share its batch (and a resumed rollout would diverge). Here each row
carries its own ``torch.Generator`` seeded from the episode's seed and we sample with the
Gumbel-max trick (argmax of logits/T + Gumbel noise is an exact sample from softmax(logits/T)),
then let ``generate`` decode greedily. Row ``i`` consumes the same noise at step ``t`` whatever
the batch, so an episode's text is a function of its own seed.

dtype: on CPU bfloat16 decodes about 2x faster than float32 single-stream and 3-4x with a batch
of 4 (measured on this project's 2-core machines; ``benchmarks/bench_rollouts.py`` re-measures
bf16 against f32, docs/agent.md) with nearly identical output, so it
is the default for generation; pass ``dtype="float32"`` for exact float32 numerics.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from sweet_agent.policies.base import Generation, Messages, Policy, PolicyError, SamplingParams, apply_stop, check_batch

DTYPES = ("bfloat16", "float32", "float16", "auto")


def _torch_dtype(name: str):
    import torch

    if name == "auto":
        return "auto"
    if name not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {name!r}")
    return getattr(torch, name)


class SeededSampler:
    """Logits processor that turns greedy decoding into per-row seeded sampling.

    Applies temperature, top-k and top-p, then adds Gumbel noise drawn from the row's own
    generator. With ``temperature == 0`` it leaves the scores alone (greedy).
    """

    def __init__(self, sampling: SamplingParams, seeds: Sequence[int | None]):
        import torch

        self.sampling = sampling
        self.generators = []
        for s in seeds:
            g = torch.Generator(device="cpu")
            if s is None:
                g.seed()  # unseeded rows draw fresh entropy
            else:
                g.manual_seed(int(s) & 0x7FFF_FFFF_FFFF_FFFF)
            self.generators.append(g)

    def __call__(self, input_ids, scores):
        import torch

        sp = self.sampling
        if sp.greedy:
            return scores
        scores = scores.float() / sp.temperature
        vocab = scores.shape[-1]
        if sp.top_k and sp.top_k < vocab:
            kth = torch.topk(scores, sp.top_k, dim=-1).values[..., -1:]
            scores = scores.masked_fill(scores < kth, float("-inf"))
        if sp.top_p < 1.0:
            scores = self._top_p(scores, sp.top_p)
        return self._add_gumbel(scores)

    #: candidates examined first for top-p; the full sort runs only when they hold < top_p mass
    TOP_P_CANDIDATES = 512

    @classmethod
    def _top_p(cls, scores, top_p: float):
        """Keep, per row, the smallest set of best tokens whose probability reaches ``top_p``.

        Exact, but cheap for large vocabularies: the nucleus almost always lies within the best
        few hundred tokens, so we look there first (``topk``) and fall back to a full sort only
        for rows where those candidates do not reach ``top_p``.
        """
        import torch

        vocab = scores.shape[-1]
        k = min(cls.TOP_P_CANDIDATES, vocab)
        log_z = torch.logsumexp(scores, dim=-1, keepdim=True)
        top_vals, top_idx = torch.topk(scores, k, dim=-1)
        probs = torch.exp(top_vals - log_z)
        before = probs.cumsum(dim=-1) - probs  # mass of the better tokens
        enough = (probs.sum(dim=-1) >= top_p) | (k == vocab)
        keep = torch.zeros_like(scores, dtype=torch.bool)
        keep.scatter_(-1, top_idx, before < top_p)  # always keeps the best token (before = 0)
        if not bool(enough.all()):
            rows = (~enough).nonzero(as_tuple=True)[0]
            sub = scores[rows]
            sorted_vals, order = torch.sort(sub, descending=True, dim=-1)
            p = torch.exp(sorted_vals - log_z[rows])
            keep_rows = torch.zeros_like(sub, dtype=torch.bool).scatter(-1, order, (p.cumsum(-1) - p) < top_p)
            keep[rows] = keep_rows
        return scores.masked_fill(~keep, float("-inf"))

    def _add_gumbel(self, scores):
        import torch

        vocab = scores.shape[-1]
        out = torch.full_like(scores, float("-inf"))
        finite = torch.isfinite(scores)
        for i, g in enumerate(self.generators):
            # draw for the whole vocabulary so each row's stream advances the same way every step,
            # but transform only the candidates that survived top-k / top-p (usually a handful)
            # CPU generators keep streams identical across devices; move the draw to the logits
            u = torch.rand(vocab, generator=g, dtype=torch.float32).to(scores.device)
            idx = finite[i].nonzero().squeeze(1)
            gumbel = -torch.log(-torch.log(u[idx].clamp_(1e-20, 1.0 - 1e-7)))
            out[i, idx] = scores[i, idx] + gumbel
        return out


class TransformersPolicy(Policy):
    """A causal LM with a chat template, decoding many conversations per forward pass.

    ``model`` and ``tokenizer`` are public so trainers can reuse the loaded weights.
    """

    def __init__(self, model: Any, tokenizer: Any, *, name: str | None = None, max_batch_size: int = 8,
                 chat_template: str | None = None, sampling: SamplingParams | None = None):
        self.model = model
        self.tokenizer = tokenizer
        self.name = name or getattr(getattr(model, "config", None), "_name_or_path", None) or "transformers"
        self.max_batch_size = max(1, int(max_batch_size))
        self.default_sampling = sampling or SamplingParams()
        if chat_template is not None:
            tokenizer.chat_template = chat_template
        if not getattr(tokenizer, "chat_template", None):
            raise PolicyError(
                f"the tokenizer of {self.name!r} has no chat template; pass chat_template=... "
                "(a Jinja template) or use an instruct model"
            )
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self._eos_ids = self._end_of_turn_ids()

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_pretrained(cls, spec: str | os.PathLike[str] | None = None, *, dtype: str = "bfloat16",
                        device: str = "auto", max_batch_size: int = 8, quiet: bool = False,
                        **kwargs: Any) -> TransformersPolicy:
        """Load a model by local path, hub id (from the HF cache when offline) or ``None``/
        ``"default"`` for the embedded default policy (see :mod:`sweet_agent.policies.default_model`),
        on ``device`` (:func:`sweet_agent.devices.resolve_device`: ``auto`` = CUDA, MPS, CPU)."""
        from transformers import AutoTokenizer

        from sweet_agent.devices import resolve_device
        from sweet_agent.policies.checkpoints import load_causal_lm, tokenizer_dir
        from sweet_agent.policies.default_model import resolve_model_path

        device = resolve_device(device)

        path = resolve_model_path(spec, quiet=quiet)
        tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir(path))
        tokenizer.padding_side = "left"
        model = load_causal_lm(path, dtype=_torch_dtype(dtype))  # a LoRA adapter: merged into its base
        model.to(device)
        model.eval()
        from sweet_agent.policies.default_model import ALIASES

        text = "default" if spec is None else os.fspath(spec)
        name = kwargs.pop("name", None) or (ALIASES[text].hub_id if text in ALIASES else text)
        return cls(model, tokenizer, name=name, max_batch_size=max_batch_size, **kwargs)

    def _end_of_turn_ids(self) -> list[int]:
        tok = self.tokenizer
        ids: list[int] = []
        gen_cfg = getattr(self.model, "generation_config", None)
        eos = getattr(gen_cfg, "eos_token_id", None) if gen_cfg is not None else None
        for e in (eos if isinstance(eos, (list, tuple)) else [eos]):
            if e is not None:
                ids.append(int(e))
        if tok.eos_token_id is not None:
            ids.append(int(tok.eos_token_id))
        # chat models end a turn with a dedicated token that is not always the tokenizer's eos
        for t in ("<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>"):
            tid = tok.convert_tokens_to_ids(t)
            if isinstance(tid, int) and tid != tok.unk_token_id and tid >= 0:
                ids.append(tid)
        return sorted(set(ids))

    # ------------------------------------------------------------------ prompts
    def render(self, messages: Messages) -> str:
        """The prompt string the model sees for ``messages`` (chat template + generation prompt)."""
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    # ------------------------------------------------------------------ generation
    supports_prefix = True

    def generate(self, conversations: Sequence[Messages], sampling: SamplingParams | None = None,
                 seeds: Sequence[int | None] | None = None,
                 prefixes: Sequence[str | None] | None = None) -> list[Generation]:
        """Next agent turn per conversation. ``prefixes[i]`` (optional) is forced as the start of
        turn ``i`` and continued by the model; the returned text begins with it."""
        seeds = check_batch(conversations, seeds)
        sampling = sampling or self.default_sampling
        prefixes = list(prefixes) if prefixes is not None else [None] * len(conversations)
        if len(prefixes) != len(conversations):
            raise PolicyError(f"got {len(prefixes)} prefixes for {len(conversations)} conversations")
        prompts = [self.render(list(c)) + (p or "") for c, p in zip(conversations, prefixes)]
        # sort by length so chunks pad little; per-row seeds make the order irrelevant to output
        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
        out: list[Generation | None] = [None] * len(prompts)
        for start in range(0, len(order), self.max_batch_size):
            idx = order[start:start + self.max_batch_size]
            gens = self._generate_chunk([prompts[i] for i in idx], sampling, [seeds[i] for i in idx])
            for i, g in zip(idx, gens):
                out[i] = replace(g, text=prefixes[i] + g.text, prefix=prefixes[i]) if prefixes[i] else g
        return out  # type: ignore[return-value]

    def sample_n(self, conversation: Messages, n: int, sampling: SamplingParams | None = None,
                 seed: int | None = None) -> list[Generation]:
        """``n`` samples of one conversation's next turn in ``ceil(n / max_batch_size)`` ``generate``
        calls that share its prompt (``num_return_sequences``), seeded once with ``seed`` (torch's
        generator): the step-pair stage's local candidates. The same ``(conversation, n, seed)``
        on the same device gives the same texts; unlike :meth:`generate` a sample's text depends
        on ``n`` and the batch size (one random stream for the whole turn)."""
        import torch

        check_batch([conversation], [seed])
        sampling = sampling or self.default_sampling
        if seed is not None:
            torch.manual_seed(int(seed) & 0x7FFF_FFFF_FFFF_FFFF)
        tok = self.tokenizer
        enc = tok(self.render(list(conversation)), add_special_tokens=False, return_tensors="pt")
        device = next(self.model.parameters()).device
        enc = {k: v.to(device) for k, v in enc.items()}
        kwargs: dict[str, Any] = {"do_sample": not sampling.greedy, "num_beams": 1,
                                  "max_new_tokens": sampling.max_new_tokens,
                                  "eos_token_id": self._eos_ids, "pad_token_id": tok.pad_token_id}
        if not sampling.greedy:
            kwargs.update(temperature=sampling.temperature, top_p=sampling.top_p, top_k=sampling.top_k)
        if sampling.stop:
            kwargs.update(stop_strings=list(sampling.stop), tokenizer=tok)
        was_training = self.model.training
        self.model.eval()
        out: list[Generation] = []
        try:
            with torch.inference_mode():
                while len(out) < n:
                    k = min(self.max_batch_size, n - len(out))
                    seq = self.model.generate(**enc, num_return_sequences=k, **kwargs)
                    out += self._decode(seq[:, enc["input_ids"].shape[1]:].tolist(),
                                        [int(enc["attention_mask"].sum())] * k, sampling)
        finally:
            self.model.train(was_training)
        return out

    def _generate_chunk(self, prompts: list[str], sampling: SamplingParams, seeds: list[int | None]) -> list[Generation]:
        import torch
        from transformers import GenerationConfig, LogitsProcessorList

        tok = self.tokenizer
        tok.padding_side = "left"
        enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        device = next(self.model.parameters()).device
        enc = {k: v.to(device) for k, v in enc.items()}
        cfg = GenerationConfig(
            max_new_tokens=sampling.max_new_tokens, do_sample=False, num_beams=1,
            eos_token_id=self._eos_ids, pad_token_id=tok.pad_token_id,
        )
        kwargs: dict[str, Any] = {}
        if sampling.stop:
            kwargs.update(stop_strings=list(sampling.stop), tokenizer=tok)
        with torch.inference_mode():
            seq = self.model.generate(
                **enc, generation_config=cfg,
                logits_processor=LogitsProcessorList([SeededSampler(sampling, seeds)]), **kwargs,
            )
        new = seq[:, enc["input_ids"].shape[1]:]
        return self._decode(new.tolist(), enc["attention_mask"].sum(dim=1).tolist(), sampling)

    def _decode(self, rows: list[list[int]], prompt_lens: list[int], sampling: SamplingParams) -> list[Generation]:
        """Generations from new token ids: each row up to its end-of-turn token, stop strings cut."""
        tok = self.tokenizer
        eos = set(self._eos_ids) | {tok.pad_token_id}
        results = []
        for row, plen in zip(rows, prompt_lens):
            n, ended = 0, False
            for t in row:
                n += 1
                if t in eos:
                    ended = True
                    break
            # trailing pads after the end are not part of the turn
            toks = row[:n]
            text = tok.decode(toks, skip_special_tokens=True)
            text, cut = apply_stop(text, sampling.stop)
            finish = "stop" if (ended or cut or n < sampling.max_new_tokens) else "length"
            results.append(Generation(text=text, prompt_tokens=int(plen), completion_tokens=n, finish_reason=finish))
        return results

    def close(self) -> None:
        self.model = None  # let the weights be garbage-collected
