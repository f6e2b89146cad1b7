"""A tiny random causal LM with a real tokenizer, built offline in about a second.

WHY: the training tests must run real TRL trainers on a real (if untrained) model without the
model hub. The tokenizer is a byte-level BPE trained on a small corpus, so any Unicode text
round-trips; the chat template is ChatML (as Qwen uses) with ``{% generation %}`` markers so
``return_assistant_tokens_mask`` works.
"""

from __future__ import annotations

from pathlib import Path

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'assistant' %}"
    "{{ '<|im_start|>assistant\n' }}{% generation %}{{ message['content'] + '<|im_end|>' }}{% endgeneration %}{{ '\n' }}"
    "{% else %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

_CORPUS = [
    "def f(x):\n    return x + 1\n",
    "What are the plan names and their prices? I WANT TO ANSWER: def monthly_fee(visits, plan):",
    "Basic members pay 2 extra per visit above 12. If someone never came, they pay half.",
    "The reference function returns the sum of the list. Please ask clarifying questions.",
    "system user assistant hello world yes no maybe return if else for while in range len",
] * 20


def build_tiny_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    tok.train_from_iterator(_CORPUS, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        bos_token=None, unk_token=None,
    )
    fast.chat_template = CHATML_TEMPLATE
    fast.padding_side = "left"
    return fast


def build_tiny_model(tokenizer, seed: int = 0, hidden: int = 32, layers: int = 2):
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    cfg = Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=2 * hidden,
        num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=2048, tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, bos_token_id=None,
    )
    model = Qwen2ForCausalLM(cfg)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model.eval()


def save_tiny(path: str | Path, seed: int = 0) -> Path:
    """Write a tiny model + tokenizer to ``path`` (loadable with ``from_pretrained``)."""
    path = Path(path)
    tok = build_tiny_tokenizer()
    model = build_tiny_model(tok, seed=seed)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path
