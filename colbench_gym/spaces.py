"""Text spaces for dialogue: any Unicode string of bounded length is a member.

Gymnasium's :class:`~gymnasium.spaces.Text` only admits strings over a fixed character set,
which rejects ordinary dialogue (accents, emoji, CJK, code with tabs). ColBench observations and
actions are free text, so membership here is "is a ``str`` within the length bounds"; sampling
still draws from a finite charset so ``sample()`` stays cheap and seeded.
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np
from gymnasium.spaces import Text

#: Characters used by :meth:`UnicodeText.sample` (membership accepts every code point).
SAMPLE_CHARSET = string.ascii_letters + string.digits + " .,:;!?()[]{}'\"=+-*/_\n" + "éüßçñøλπ中文✓"


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
