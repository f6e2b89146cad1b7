"""A backend human simulator run by a local transformers causal LM (needs the [agent] extra)."""

from __future__ import annotations

from typing import Any

from colbench_gym.simulators.base import Dialogue, HumanSimulator, SimulatorError
from colbench_gym.simulators.leak_guard import with_retry_note
from colbench_gym.simulators.prompts import READING_BUDGETS, backend_messages
from colbench_gym.spaces import encodable_data
from colbench_gym.tasks.records import BackendTask


class TransformersBackendSimulator(HumanSimulator):
    """Loads ``model`` (a local path or a hub id already in the HF cache) once and chats with it."""

    kind = "backend"

    def __init__(
        self,
        model: str | Any,
        tokenizer: Any = None,
        max_new_tokens: int = 128,
        temperature: float = 0.0,
        top_p: float = 1.0,
        dtype: str = "auto",
        device: str | None = None,
    ) -> None:
        try:
            import torch  # noqa: PLC0415 - optional extra
            from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: PLC0415
        except ImportError as exc:
            raise SimulatorError(
                "the 'transformers' simulator needs torch and transformers: pip install 'colbench-gym[agent]'"
            ) from exc
        self._torch = torch
        self._model_name = model if isinstance(model, str) else str(getattr(getattr(model, "config", None),
                                                                            "_name_or_path", "") or "")
        if isinstance(model, str):
            try:
                self.tokenizer = tokenizer or AutoTokenizer.from_pretrained(model)
                self.model = AutoModelForCausalLM.from_pretrained(model, dtype=dtype)
            except OSError as exc:
                raise SimulatorError(
                    f"cannot load simulator model {model!r} ({exc}); pass a local directory, or download "
                    "the model into the HF cache first (this library never downloads at run time with HF_HUB_OFFLINE=1)"
                ) from exc
        else:
            if tokenizer is None:
                raise SimulatorError("pass tokenizer= together with a model object")
            self.model, self.tokenizer = model, tokenizer
        if device:
            self.model.to(device)
        self.model.eval()
        self.max_new_tokens, self.temperature, self.top_p = max_new_tokens, temperature, top_p
        self._seed: int | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Picklable and deep-copyable (spawned vector envs): model and tokenizer travel with their
        # settings; the torch module handle does not pickle and is imported again on arrival.
        state = dict(self.__dict__)
        state.pop("_torch", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        import torch  # noqa: PLC0415 - optional extra, present wherever the pickle was made

        self.__dict__.update(state)
        self._torch = torch

    def reset(self, task, *, seed: int | None = None) -> None:
        self._seed = seed

    def respond(self, task: BackendTask, dialogue: Dialogue, **context: Any) -> str:
        torch = self._torch
        # The most of the dialogue whose prompt fits the model's context with room for the reply
        # (the last budget holds none of it: then a prompt too long is the task's, not the agent's).
        limit = self.context_tokens()
        for budget in READING_BUDGETS:
            # with the leak guard's instruction when it withheld the previous reply
            messages = with_retry_note(backend_messages(task, dialogue, budget), context, "backend")
            # a fast tokenizer takes no lone surrogate (TypeError): any str of the dialogue goes in encodable
            ids = self.tokenizer.apply_chat_template(
                encodable_data(messages), add_generation_prompt=True, return_tensors="pt", return_dict=True
            )
            if limit is None or ids["input_ids"].shape[1] + self.max_new_tokens <= limit:
                break
        else:
            raise SimulatorError(f"the simulator model's context ({limit} tokens) cannot hold the task's own prompt "
                                 f"({ids['input_ids'].shape[1]} tokens without the dialogue) and "
                                 f"{self.max_new_tokens} new tokens: use a model with a longer context")
        ids = {k: v.to(self.model.device) for k, v in ids.items()}
        if self._seed is not None:
            torch.manual_seed(self._seed + len(dialogue) + 1000 * int(context.get("leak_retry") or 0))
        sample = self.temperature > 0
        with torch.no_grad():
            out = self.model.generate(
                **ids, max_new_tokens=self.max_new_tokens, do_sample=sample,
                temperature=self.temperature if sample else None, top_p=self.top_p if sample else None,
                pad_token_id=self.tokenizer.pad_token_id or self.tokenizer.eos_token_id,
            )
        prompt_len = ids["input_ids"].shape[1]
        self._count_tokens(int(prompt_len), int(out.shape[1] - prompt_len))  # tokenizer counts: no usage fields
        return self.tokenizer.decode(out[0, prompt_len:], skip_special_tokens=True).strip()

    def context_tokens(self) -> int | None:
        """The longest sequence the model takes, or None when nothing says: its config's
        ``max_position_embeddings`` (or a multimodal config's ``text_config``'s, or the
        ``max_seq_len`` / ``seq_length`` / ``n_positions`` some architectures name it by), else
        the tokenizer's ``model_max_length`` when that is a real limit."""
        config = getattr(self.model, "config", None)
        for where in (config, getattr(config, "text_config", None)):
            for name in ("max_position_embeddings", "max_seq_len", "seq_length", "n_positions"):
                n = getattr(where, name, None)
                if isinstance(n, int) and n > 0:
                    return n
        n = getattr(self.tokenizer, "model_max_length", None)
        return n if isinstance(n, int) and 0 < n < 10**7 else None

    @property
    def model_name(self) -> str:
        return self._model_name
