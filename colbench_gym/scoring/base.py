"""The image-similarity scorer interface used for frontend rewards and evaluation."""

from __future__ import annotations

import hashlib
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from typing import Any

import numpy as np

_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))


def image_key(image: Any) -> str:
    """Content hash of a PIL image (mode, size, pixels): the key of the embedding cache."""
    h = hashlib.sha256(f"{image.mode}{image.size}".encode())
    h.update(image.tobytes())
    return h.hexdigest()[:32]


class ImageScorer(ABC):
    """Embeds screenshots and scores pairs by cosine similarity of their embeddings.

    Embeddings are cached by image content (an LRU), so a reference screenshot is embedded once
    however many episodes or evaluations compare against it.
    """

    #: Short, honest name reported in ``info["scorer"]`` and evaluation output.
    name: str = "scorer"
    #: True only for a real CLIP model with trained weights.
    is_clip: bool = False

    def __init__(self, batch_size: int = 16, cache_size: int = 4096):
        self.batch_size = int(batch_size)
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        # Picklable and deep-copyable (spawned vector envs), subclasses included: settings travel;
        # locks (any attribute holding one) are made anew on arrival, and the embedding cache (a
        # per-process speed-up) starts empty.
        state = {k: v for k, v in self.__dict__.items() if not isinstance(v, _LOCK_TYPES)}
        state["_locks_to_make"] = {k: _LOCK_TYPES.index(type(v)) for k, v in self.__dict__.items()
                                   if isinstance(v, _LOCK_TYPES)}
        state["_cache"] = OrderedDict()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        for name, which in state.pop("_locks_to_make", {"_lock": 0}).items():
            state[name] = (threading.Lock, threading.RLock)[which]()
        self.__dict__.update(state)

    @abstractmethod
    def _embed_batch(self, images: list[Any]) -> np.ndarray:
        """Unit-norm embeddings, one row per image."""

    def embed(self, images: list[Any]) -> np.ndarray:
        """Embeddings of ``images`` (PIL), computed in batches, cached by content."""
        keys = [image_key(im) for im in images]
        out: list[np.ndarray | None] = [None] * len(images)
        todo: list[int] = []
        with self._lock:
            for i, k in enumerate(keys):
                hit = self._cache.get(k)
                if hit is not None:
                    self._cache.move_to_end(k)
                    out[i] = hit
                else:
                    todo.append(i)
        # de-duplicate identical images inside one call
        first: dict[str, int] = {}
        uniq = [i for i in todo if first.setdefault(keys[i], i) == i]
        for start in range(0, len(uniq), self.batch_size):
            chunk = uniq[start:start + self.batch_size]
            vecs = np.asarray(self._embed_batch([images[i] for i in chunk]), dtype=np.float32)
            with self._lock:
                for i, v in zip(chunk, vecs):
                    self._cache[keys[i]] = v
                    self._cache.move_to_end(keys[i])
                    while len(self._cache) > self._cache_size:
                        self._cache.popitem(last=False)
        with self._lock:
            for i in todo:
                out[i] = self._cache.get(keys[i])
                if out[i] is None:  # evicted already (tiny cache): recompute alone
                    out[i] = np.asarray(self._embed_batch([images[i]]), dtype=np.float32)[0]
        return np.stack(out) if out else np.zeros((0, 1), dtype=np.float32)

    def similarity(self, image: Any, reference: Any) -> float:
        """Cosine similarity of one pair."""
        return float(self.similarities([image], [reference])[0])

    def similarities(self, images: list[Any], references: list[Any]) -> np.ndarray:
        """Cosine similarity of each ``images[i]`` with ``references[i]`` (batched), as a score in
        [0, 1]: float rounding can put a page's similarity with itself a hair above 1, and a
        (random-weight) embedding can point away from the reference; every reward and record
        field is a score in [0, 1] (:func:`colbench_gym.tasks.records.check_record_fields`)."""
        if len(images) != len(references):
            raise ValueError(f"{len(images)} images but {len(references)} references")
        if not images:
            return np.zeros(0, dtype=np.float32)
        emb = self.embed(list(images) + list(references))
        a, b = emb[: len(images)], emb[len(images):]
        sims = np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1) + 1e-12)
        return np.clip(sims, 0.0, 1.0)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"
