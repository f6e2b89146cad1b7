"""Scorers: the declared fallback (no weights) and the CLIP path with random weights."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
from PIL import Image, ImageDraw

from colbench_gym.scoring import FALLBACK_NAME, ClipUnavailableWarning, FallbackScorer, make_scorer


def _page(bg=(255, 250, 235), header=(120, 60, 20), cols=3, shift=0):
    im = Image.new("RGB", (1280, 1200), bg)
    d = ImageDraw.Draw(im)
    d.rectangle([0, 0, 1279, 90], fill=header)
    w = 1180 // cols
    for k in range(cols):
        d.rectangle([50 + k * w + shift, 300, 50 + (k + 1) * w - 30 + shift, 600], fill=(255, 255, 255), outline=(200, 200, 200))
    d.rectangle([0, 1100, 1279, 1199], fill=header)
    return im


def test_fallback_is_declared_and_orders_similarity_sensibly():
    s = FallbackScorer()
    assert s.name == FALLBACK_NAME and "not CLIP" in s.name and s.is_clip is False
    ref = _page()
    same = s.similarity(ref, ref.copy())
    near = s.similarity(_page(shift=6), ref)
    recoloured = s.similarity(_page(header=(30, 60, 200)), ref)
    relaid = s.similarity(_page(cols=1), ref)
    blank = s.similarity(Image.new("RGB", (1280, 800), "white"), ref)
    assert same == pytest.approx(1.0, abs=1e-6)
    # a few pixels off, or other colours, cost less than another layout; an empty page gets ~nothing
    assert same > max(near, recoloured) and min(near, recoloured) > relaid > 0.5 > 0.05 > blank
    # deterministic, batched == one by one, cached embeddings
    batch = s.similarities([_page(shift=6), _page(cols=1)], [ref, ref])
    assert np.allclose(batch, [near, relaid])


def test_auto_without_weights_warns_and_falls_back(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HOME", str(tmp_path))
    import colbench_gym.scoring as scoring
    monkeypatch.setattr(scoring, "_warned", False)
    with pytest.warns(ClipUnavailableWarning, match="NOT comparable"):
        s = make_scorer("auto")
    assert isinstance(s, FallbackScorer)
    from colbench_gym.scoring.clip import ClipWeightsUnavailable
    with pytest.raises(ClipWeightsUnavailable, match="pretrained=/path/to/weights"):
        make_scorer("clip")
    with pytest.raises(ValueError, match="unknown scorer"):
        make_scorer("dino")


def test_scoring_modules_import_without_torch():
    code = ("import sys, colbench_gym, colbench_gym.scoring, colbench_gym.rendering, colbench_gym.envs.frontend, "
            "colbench_gym.evaluation.frontend, colbench_gym.simulators.offline_frontend, colbench_gym.simulators.openai_frontend\n"
            "from colbench_gym.scoring import make_scorer; make_scorer('fallback')\n"
            "bad = [m for m in ('torch', 'open_clip', 'transformers', 'trl') if m in sys.modules]\n"
            "assert not bad, bad")
    proc = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


@pytest.fixture(scope="module")
def clip_random():
    pytest.importorskip("open_clip")
    return make_scorer("clip-random", batch_size=2)


@pytest.mark.slow
def test_clip_path_with_random_weights(clip_random):
    s = clip_random
    assert s.name == "clip-ViT-B-32-random-init" and s.is_clip is False  # random weights never pass as CLIP
    ref = _page()
    imgs = [ref.copy(), _page(cols=1), Image.new("RGB", (1280, 800), "white")]
    sims = s.similarities(imgs, [ref] * 3)
    assert sims[0] == pytest.approx(1.0, abs=1e-5) and sims[1] < sims[0] and sims[2] < sims[0]
    one_by_one = [s.similarity(im, ref) for im in imgs]
    assert np.allclose(sims, one_by_one, atol=1e-5)  # batched (batch_size=2, 6 images) == single
    emb = s.embed(imgs)
    assert emb.shape == (3, 512) and np.allclose(np.linalg.norm(emb, axis=1), 1, atol=1e-4)


@pytest.mark.slow
def test_clip_loads_weights_from_a_file_path(clip_random, tmp_path):
    """The real-weights code path (pretrained=<file>), exercised with a saved random state dict."""
    import torch

    from colbench_gym.scoring.clip import ClipScorer
    path = tmp_path / "open_clip_pytorch_model.bin"
    torch.save(clip_random.model.state_dict(), path)
    loaded = ClipScorer(pretrained=str(path), batch_size=4)
    assert loaded.weights == str(path) and path.name in loaded.name and loaded.is_clip
    ref = _page()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = loaded.embed([ref, _page(cols=1)])
    b = clip_random.embed([ref, _page(cols=1)])
    assert np.allclose(a, b, atol=1e-4)  # the file's weights were really loaded
    assert float(loaded.similarity(ref, ref)) == pytest.approx(1.0, abs=1e-5)
