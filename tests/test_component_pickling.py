"""Every grader, simulator and scorer survives pickle and deepcopy with its class and settings.

Why: spawned vector envs and multiprocessing pickle their environments; a copy that silently
changes class (a ``ReleaseGrader`` coming back as the strict ``BackendGrader``) changes every
verdict without a word. The classes are *enumerated* from the packages (every public concrete
subclass of ``BackendGrader``, ``HumanSimulator`` or ``ImageScorer`` in ``colbench_gym.grading``,
``colbench_gym.simulators`` and ``colbench_gym.scoring``), so a new class is covered by this test
the day it is added: it fails until ``FACTORIES`` says how to build one.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import pickle
import pkgutil
from typing import Any

import pytest

PACKAGES = ("colbench_gym.grading", "colbench_gym.simulators", "colbench_gym.scoring")


def _roles() -> tuple[type, ...]:
    from colbench_gym.grading import BackendGrader
    from colbench_gym.scoring.base import ImageScorer
    from colbench_gym.simulators.base import HumanSimulator

    return BackendGrader, HumanSimulator, ImageScorer


def public_component_classes() -> list[type]:
    """Public, concrete grader / simulator / scorer classes defined anywhere in the three packages."""
    roles = _roles()
    found: dict[str, type] = {}
    for name in PACKAGES:
        pkg = importlib.import_module(name)
        modules = [name] + [m.name for m in pkgutil.walk_packages(pkg.__path__, name + ".")]
        for mod_name in modules:
            if any(part.startswith("_") for part in mod_name.split(".")):
                continue
            module = importlib.import_module(mod_name)
            for cls_name, cls in vars(module).items():
                if (inspect.isclass(cls) and cls.__module__ == mod_name and not cls_name.startswith("_")
                        and issubclass(cls, roles) and not inspect.isabstract(cls)):
                    found[f"{mod_name}.{cls_name}"] = cls
    return [found[k] for k in sorted(found)]


def _tiny_transformers_simulator(tmp_path):
    from colbench_gym.simulators.transformers_simulator import TransformersBackendSimulator
    from tests.training.tiny_model import save_tiny

    return TransformersBackendSimulator(str(save_tiny(tmp_path / "tiny")), max_new_tokens=4, temperature=0.7)


#: How to build each class with settings that differ from its defaults (so a copy that falls back
#: to defaults, or to a base class, is caught).
FACTORIES: dict[str, Any] = {
    "BackendGrader": lambda tmp: __import__("colbench_gym.grading", fromlist=["BackendGrader"]).BackendGrader(
        call_timeout=1.5, memory_mb=384, rel_tol=1e-4),
    "ReleaseGrader": lambda tmp: __import__("colbench_gym.grading.release", fromlist=["ReleaseGrader"]).ReleaseGrader(
        call_timeout=0.75, memory_mb=384),
    "OfflineBackendSimulator": lambda tmp: __import__(
        "colbench_gym.simulators.offline_backend", fromlist=["x"]).OfflineBackendSimulator(seed=7, max_chars=200,
                                                                                          nudges=False, max_facts=1),
    "OfflineFrontendSimulator": lambda tmp: __import__(
        "colbench_gym.simulators.offline_frontend", fromlist=["x"]).OfflineFrontendSimulator(max_points=2),
    "OpenAIBackendSimulator": lambda tmp: __import__(
        "colbench_gym.simulators.openai_backend", fromlist=["x"]).OpenAIBackendSimulator(
        model="sim-model", base_url="http://127.0.0.1:9/v1", temperature=0.3, max_tokens=77, seed=5),
    "OpenAIFrontendSimulator": lambda tmp: __import__(
        "colbench_gym.simulators.openai_frontend", fromlist=["x"]).OpenAIFrontendSimulator(
        model="vlm", base_url="http://127.0.0.1:9/v1", max_image_width=512, image_detail="low"),
    "TransformersBackendSimulator": _tiny_transformers_simulator,
    "FallbackScorer": lambda tmp: __import__("colbench_gym.scoring", fromlist=["x"]).FallbackScorer(
        batch_size=8, cache_size=32),
    "ClipScorer": lambda tmp: __import__("colbench_gym.scoring.clip", fromlist=["x"]).ClipScorer(
        pretrained=None, device="cpu", batch_size=3, cache_size=9),
}


def _plain(value: Any) -> bool:
    if value is None or type(value) in (bool, int, float, str):
        return True
    if type(value) in (list, tuple):
        return all(_plain(v) for v in value)
    if type(value) is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    return False


def settings(obj: Any) -> dict[str, Any]:
    """The object's plain-data attributes: its settings (runtime handles are not plain data)."""
    return {k: v for k, v in vars(obj).items() if _plain(v)}


def test_the_enumeration_finds_every_kind_of_component():
    names = {c.__name__ for c in public_component_classes()}
    assert {"BackendGrader", "ReleaseGrader", "OfflineBackendSimulator", "OpenAIBackendSimulator",
            "FallbackScorer"} <= names


#: Classes whose construction loads torch and a real network (tens of seconds on a shared CPU).
SLOW = {"ClipScorer"}


def _params() -> list[Any]:
    return [pytest.param(c, id=c.__name__, marks=[pytest.mark.slow] if c.__name__ in SLOW else [])
            for c in public_component_classes()]


@pytest.mark.parametrize("cls", _params())
@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_component_survives_copying_with_its_class_and_settings(cls, how, tmp_path):
    factory = FACTORIES.get(cls.__name__)
    assert factory is not None, (f"{cls.__module__}.{cls.__name__} is a public grader/simulator/scorer: add a "
                                 "factory to FACTORIES in tests/test_component_pickling.py (and make it picklable)")
    obj = factory(tmp_path)
    try:
        assert type(obj) is cls
        before = settings(obj)
        assert before, f"{cls.__name__} exposes no settings to compare"
        clone = pickle.loads(pickle.dumps(obj)) if how == "pickle" else copy.deepcopy(obj)
        try:
            assert type(clone) is cls, f"{how} turned a {cls.__name__} into a {type(clone).__name__}"
            assert settings(clone) == before
        finally:
            getattr(clone, "close", lambda: None)()
    finally:
        getattr(obj, "close", lambda: None)()


def test_a_copied_release_grader_still_gives_the_release_verdicts():
    """The concrete harm of the old ``__reduce__``: release semantics became ours after a copy."""
    from colbench_gym.grading.release import ReleaseGrader
    from colbench_gym.tasks import BackendTask

    task = BackendTask("t", "def f(x):\n    return x\n", {"a": "f(2)", "b": "f(3)"})
    answer = "def f(x):\n    return x * 1.0\n"  # 2.0 for 2: the release's plain == passes it, our strict rules do not
    with ReleaseGrader() as grader:
        assert grader.grade(answer, task).passed == 2
        for clone in (pickle.loads(pickle.dumps(grader)), copy.deepcopy(grader)):
            with clone:
                assert type(clone) is ReleaseGrader and clone.call_timeout == grader.call_timeout
                assert clone.grade(answer, task).passed == 2
