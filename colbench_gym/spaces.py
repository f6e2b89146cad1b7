"""Text spaces for dialogue: any Unicode string of bounded length is a member.

Gymnasium's :class:`~gymnasium.spaces.Text` only admits strings over a fixed character set,
which rejects ordinary dialogue (accents, emoji, CJK, code with tabs). ColBench observations and
actions are free text, so membership here is "is a ``str`` within the length bounds"; sampling
still draws from a finite charset so ``sample()`` stays cheap and seeded.

Any ``str`` is a valid turn, including one no encoding can carry: a lone surrogate (a code
point U+D800 to U+DFFF outside a pair, e.g. ``"rate \\ud800?"``; JSON's ``\\ud800`` escape and
``surrogateescape`` decoding produce them), on which ``str.encode("utf-8")`` raises. Where text
leaves Python (seeding or hashing, an HTTP body, a tokenizer, a file, a pipe) it goes through
:func:`encodable` (one string) or :func:`encodable_data` (the strings of JSON-like data): the
same text when it encodes, else the text with each surrogate pair joined into the character it
spells and every lone surrogate replaced by U+FFFD. NULs and other control characters are valid
Unicode and stay as they are.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.spaces import Text

#: Characters used by :meth:`UnicodeText.sample` (membership accepts every code point).
SAMPLE_CHARSET = string.ascii_letters + string.digits + " .,:;!?()[]{}'\"=+-*/_\n" + "éüßçñøλπ中文✓"


def encodable(text: str) -> str:
    """``text`` made safe to encode (UTF-8, JSON, a tokenizer): ``text`` itself when it already
    is; else surrogate pairs joined into their character and lone surrogates replaced by U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def encodable_data(value: Any) -> Any:
    """``value`` (JSON-like: dicts, lists, tuples, strings, numbers) with every string, keys
    included, made :func:`encodable` (containers are copied, other values kept as they are)."""
    if isinstance(value, str):
        return encodable(value)
    if isinstance(value, dict):
        return {encodable_data(k): encodable_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [encodable_data(v) for v in value]
        return items if isinstance(value, list) else tuple(items)
    return value


class UnicodeText(Text):
    """A :class:`gymnasium.spaces.Text` that contains every ``str`` of ``min_length..max_length``."""

    def __init__(self, max_length: int = 1_000_000, *, min_length: int = 0, seed: Any = None):
        super().__init__(max_length=max_length, min_length=min_length, charset=SAMPLE_CHARSET, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        if mask is not None or probability is not None:
            return super().sample(mask=mask, probability=probability)
        # Short samples: a random action of a million characters helps nobody.
        length = int(self.np_random.integers(self.min_length, min(self.max_length, 64) + 1))
        chars = np.array(list(SAMPLE_CHARSET))
        return "".join(self.np_random.choice(chars, size=length))

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"

    def __eq__(self, other: Any) -> bool:
        return (
            isinstance(other, UnicodeText)
            and self.min_length == other.min_length
            and self.max_length == other.max_length
        )


# ----------------------------------------------------------------------------- vector envs
# Gymnasium flattens a Text value into indices of its sample charset, and AsyncVectorEnv passes
# observations through shared memory that way: every character outside ``SAMPLE_CHARSET`` came
# back as the charset's first letter ("aaaa..."). A UnicodeText is stored as code points + 1
# instead (0 = padding), so any string of the space round-trips exactly.
def _encode(space: UnicodeText, x: str) -> np.ndarray:
    codes = np.frombuffer(x.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.int32) + 1
    out = np.zeros(space.max_length, dtype=np.int32)
    out[: len(codes)] = codes[: space.max_length]
    return out


def _decode(row: np.ndarray) -> str:
    end = np.flatnonzero(row == 0)
    used = row[: end[0]] if len(end) else row
    return (used.astype(np.uint32) - 1).tobytes().decode("utf-32-le", "surrogatepass")


class SharedTexts(Sequence):
    """The batch of strings in an AsyncVectorEnv's shared buffer, decoded when read.

    AsyncVectorEnv reads its shared memory once, at construction, and relies on the result being
    a live view (true of numpy arrays); a tuple of ``str`` would be a stale snapshot. This
    sequence decodes the buffer on each access; ``deepcopy`` (what the vector env returns with
    ``copy=True``, its default) gives a plain tuple, exactly what sync mode returns.
    """

    def __init__(self, data: np.ndarray):
        self._data = data

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return tuple(_decode(row) for row in self._data[i])
        return _decode(self._data[i])

    def __deepcopy__(self, memo: Any) -> tuple[str, ...]:
        return tuple(self)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, (tuple, list, SharedTexts)) and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment] - mutable view

    def __repr__(self) -> str:
        return f"SharedTexts({tuple(self)!r})"


def _register_vector_support() -> None:
    from gymnasium.spaces import utils as space_utils
    from gymnasium.vector.utils import shared_memory as shm

    space_utils.flatten.register(UnicodeText)(_encode)
    space_utils.unflatten.register(UnicodeText)(lambda space, x: _decode(np.asarray(x)))

    @shm.write_to_shared_memory.register(UnicodeText)
    def _write(space: UnicodeText, index: int, value: str, shared_memory: Any) -> None:
        size = space.max_length
        dest = np.frombuffer(shared_memory.get_obj(), dtype=np.int32)
        np.copyto(dest[index * size:(index + 1) * size], _encode(space, value))

    @shm.read_from_shared_memory.register(UnicodeText)
    def _read(space: UnicodeText, shared_memory: Any, n: int = 1) -> SharedTexts:
        return SharedTexts(np.frombuffer(shared_memory.get_obj(), dtype=np.int32).reshape((n, space.max_length)))


_register_vector_support()
