"""Compatibility alias of :mod:`colbench_gym.simulators.offline_backend.question`.

The offline backend simulator's message understanding lives in the
:mod:`colbench_gym.simulators.offline_backend` package now (questions in ``.question``, word
normalisation in ``.words``); this module keeps the names it always offered importable from here.
"""

from __future__ import annotations

from colbench_gym.simulators.offline_backend.question import (
    Message,
    Question,
    analyse,
    find_code,
    make_question,
    numbers_in,
    quoted_in,
)
from colbench_gym.simulators.offline_backend.words import STOPWORDS, keywords, split_identifier, stem, words_match

__all__ = [
    "STOPWORDS",
    "Message",
    "Question",
    "analyse",
    "find_code",
    "keywords",
    "make_question",
    "numbers_in",
    "quoted_in",
    "split_identifier",
    "stem",
    "words_match",
]
