"""CLIP ViT-B/32 image similarity (the paper's frontend metric), via open_clip.

torch and open_clip are imported only when a :class:`ClipScorer` is built, so ``colbench_gym``
imports without them. Weights are never downloaded implicitly by us: ``pretrained="openai"``
looks for the file in the places open_clip and huggingface_hub cache it (probed on disk, so an
offline machine gets an answer at once instead of a minute of hub retries); a path loads that
file; ``pretrained=None`` builds random weights (for testing the pipeline only — it is named
``clip-ViT-B-32-random-init`` and never passes for the paper's metric).
"""

from __future__ import annotations

import glob
import importlib.util
import os
from pathlib import Path
from typing import Any

import numpy as np

from colbench_gym.scoring.base import ImageScorer

#: open_clip's pretrained tag -> HF hub repo holding the same weights.
_HF_REPOS = {("ViT-B-32", "openai"): "timm/vit_base_patch32_clip_224.openai"}
_URL_FILES = {("ViT-B-32", "openai"): "ViT-B-32.pt"}
_WEIGHT_FILES = ("open_clip_model.safetensors", "open_clip_pytorch_model.bin")


class ClipWeightsUnavailable(RuntimeError):
    """CLIP weights (or torch/open_clip) are not available here; the message says what to do."""


def _hf_hub_dirs() -> list[Path]:
    dirs = []
    if os.environ.get("HF_HUB_CACHE"):
        dirs.append(Path(os.environ["HF_HUB_CACHE"]))
    if os.environ.get("HF_HOME"):
        dirs.append(Path(os.environ["HF_HOME"]) / "hub")
    dirs.append(Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "huggingface" / "hub")
    return dirs


def find_clip_weights(model: str = "ViT-B-32", pretrained: str = "openai",
                      cache_dir: str | os.PathLike[str] | None = None) -> str | None:
    """Path of cached weights for ``(model, pretrained)``, found without importing torch or
    touching the network; ``None`` when not cached. A ``pretrained`` that is a file path is
    returned as is when it exists."""
    if pretrained and os.path.isfile(os.path.expanduser(pretrained)):
        return os.path.expanduser(pretrained)
    repo = _HF_REPOS.get((model, pretrained))
    candidates: list[str] = []
    roots = ([Path(cache_dir)] if cache_dir else []) + _hf_hub_dirs()
    if repo:
        folder = "models--" + repo.replace("/", "--")
        for root in roots:
            for name in _WEIGHT_FILES:
                candidates += sorted(glob.glob(str(root / folder / "snapshots" / "*" / name)))
    url_file = _URL_FILES.get((model, pretrained))
    if url_file:
        for root in ([Path(cache_dir)] if cache_dir else []) + [Path.home() / ".cache" / "clip"]:
            candidates.append(str(root / url_file))
    for cand in candidates:
        if os.path.isfile(cand) and os.path.getsize(cand) > 1_000_000:
            return cand
    return None


def clip_available(model: str = "ViT-B-32", pretrained: str = "openai") -> tuple[bool, str]:
    """``(True, path)`` when CLIP can score here, else ``(False, reason)``; cheap (no torch import)."""
    missing = [m for m in ("torch", "open_clip") if importlib.util.find_spec(m) is None]
    if missing:
        return False, (f"{' and '.join(missing)} not installed (pip install 'colbench-gym[clip]')")
    path = find_clip_weights(model, pretrained)
    if path is None:
        return False, (
            f"no cached weights for open_clip {model} pretrained={pretrained!r}; download them once on a "
            "machine with network (python -c \"import open_clip; open_clip.create_model_and_transforms("
            f"'{model}', pretrained='{pretrained}')\"), copy the HF cache folder models--"
            f"{_HF_REPOS.get((model, pretrained), '?').replace('/', '--')} here, or pass pretrained=/path/to/weights"
        )
    return True, path


class ClipScorer(ImageScorer):
    """open_clip image embeddings, cosine similarity; batched on CPU or GPU.

    Args:
        model: open_clip architecture (paper: ``ViT-B-32``).
        pretrained: ``"openai"`` (paper), a path to a weights file, or ``None`` for random
            weights (pipeline tests only).
        device: ``"cpu"``, ``"cuda"``...; default: CUDA when available.
        batch_size: images per forward pass.
    """

    is_clip = True

    def __init__(self, model: str = "ViT-B-32", pretrained: str | None = "openai", device: str | None = None,
                 batch_size: int = 16, cache_size: int = 4096):
        super().__init__(batch_size=batch_size, cache_size=cache_size)
        # What a copy is rebuilt from (pickle, deepcopy): the model is loaded again, not pickled.
        self._init_args = dict(model=model, pretrained=pretrained, device=device, batch_size=batch_size,
                               cache_size=cache_size)
        missing = [m for m in ("torch", "open_clip") if importlib.util.find_spec(m) is None]
        if missing:
            raise ClipWeightsUnavailable(
                f"CLIP scoring needs {' and '.join(missing)}: pip install 'colbench-gym[clip]' "
                "(or use scorer='fallback', the declared weight-free scorer)")
        import open_clip  # noqa: PLC0415 - optional, heavy
        import torch  # noqa: PLC0415

        self._torch = torch
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        kwargs: dict[str, Any] = {"device": self.device}
        if pretrained is None:
            self.name, self.is_clip, self.weights = f"clip-{model}-random-init", False, None
            kwargs["pretrained"] = None
        else:
            ok, where = clip_available(model, pretrained)
            if not ok:
                raise ClipWeightsUnavailable(f"CLIP scoring is unavailable: {where}")
            self.weights = where
            kwargs["pretrained"] = where
            if pretrained == "openai" or "openai" in where:
                kwargs["force_quick_gelu"] = True  # OpenAI's weights were trained with QuickGELU
            self.name = f"clip-{model}-{pretrained if pretrained == 'openai' else Path(where).name}"
        if pretrained is None:
            torch.manual_seed(0)  # random init, but the same random net in every process
        try:
            net, _, preprocess = open_clip.create_model_and_transforms(model, **kwargs)
        except Exception as exc:  # noqa: BLE001 - a corrupt or mismatched file: say which
            raise ClipWeightsUnavailable(f"could not load open_clip {model} from {kwargs['pretrained']!r}: {exc}") from exc
        net.eval()
        self.model, self.preprocess = net, preprocess

    def __reduce__(self):
        # Picklable and deep-copyable as the same class with the same settings: the copy loads
        # the weights itself (a torch module handle and a 600 MB net do not belong in a pickle).
        return (_rebuild, (type(self), self._init_args))

    def _embed_batch(self, images: list[Any]) -> np.ndarray:
        torch = self._torch
        batch = torch.stack([self.preprocess(im.convert("RGB")) for im in images]).to(self.device)
        with torch.inference_mode():
            feats = self.model.encode_image(batch).float()
            feats = feats / feats.norm(dim=-1, keepdim=True)
        return feats.cpu().numpy()


def _rebuild(cls: type, kwargs: dict[str, Any]) -> ClipScorer:
    return cls(**kwargs)
