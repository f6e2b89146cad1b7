"""The VLM simulator against a real local HTTP server speaking the OpenAI protocol."""

from __future__ import annotations

import base64
import io

import gymnasium as gym
import pytest
from PIL import Image

import colbench_gym  # noqa: F401
from colbench_gym.simulators import make_simulator
from colbench_gym.simulators.openai_frontend import OpenAIFrontendSimulator
from colbench_gym.simulators.prompts import READING_BUDGETS
from tests.frontend.test_frontend_env import DRAFT, TASK
from tests.local_openai_server import LocalOpenAIServer

pytestmark = pytest.mark.browser


def _images(message):
    return [p["image_url"]["url"] for p in message["content"] if p.get("type") == "image_url"]


def _decode(url):
    assert url.startswith("data:image/png;base64,")
    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))


def test_registry_points_to_the_vlm_simulator():
    sim = make_simulator("openai", "frontend", model="vlm", base_url="http://127.0.0.1:9/v1")
    assert isinstance(sim, OpenAIFrontendSimulator)


def test_vlm_gets_both_screenshots_and_retries(browser_ready):
    with LocalOpenAIServer(lambda body: "The header should be dark green. " * 60, fail_first=1) as server:
        env = gym.make("ColBench-Frontend-v0", scorer="fallback", simulator="openai",
                       simulator_kwargs={"base_url": server.base_url, "model": "vlm", "max_retries": 2,
                                         "max_image_width": 640, "timeout": 30})
        env.reset(options={"task": TASK})
        obs, *_ = env.step("private plan OUTPUT: What do you think? " + DRAFT)
        assert obs.startswith("The header should be dark green.") and len(obs) == 1000
        assert len(server.requests) == 2  # the injected 500 was retried
        msgs = server.requests[-1]["body"]["messages"]
        assert msgs[0]["role"] == "system" and TASK["problem_description"] in msgs[0]["content"]
        assert TASK["ground_truth"] not in str(msgs)  # the VLM sees the reference only as a picture
        last = msgs[-1]
        assert last["role"] == "user" and "private plan" not in str(last)
        agent_png, ref_png = (_decode(u) for u in _images(last))
        assert agent_png.size[0] == 640 and ref_png.size[0] == 640
        assert agent_png.getpixel((5, 300)) == (255, 255, 255)  # the draft: white page
        assert ref_png.getpixel((5, 300)) != (255, 255, 255)  # the reference: emerald page
        env.step("Any colour preference?")
        last = server.requests[-1]["body"]["messages"][-1]
        assert len(_images(last)) == 1 and "did not show a page" in str(last["content"])
        roles = [m["role"] for m in server.requests[-1]["body"]["messages"]]
        assert roles == ["system", "user", "assistant", "user"]
        env.close()


def test_a_refused_request_is_asked_again_without_the_agent_s_page(browser_ready):
    """An endpoint that refuses every request holding the agent's page (a provider's filter, or a
    context the page's screenshot overflows): the person still replies, from a request holding
    only the reference page and a note; the agent's episode goes on."""
    def refuse(body):
        return "refused" if len(_images(body["messages"][-1])) > 1 else None

    with LocalOpenAIServer(lambda body: "Make it green.", refuse=refuse) as server:
        env = gym.make("ColBench-Frontend-v0", scorer="fallback", simulator="openai",
                       simulator_kwargs={"base_url": server.base_url, "model": "vlm", "max_retries": 0})
        env.reset(options={"task": TASK})
        obs, _, done, _, _ = env.step("What do you think? " + DRAFT)
        env.close()
    assert obs == "Make it green." and not done
    assert len(server.requests) == len(READING_BUDGETS)  # every budget but the last refused
    last = server.requests[-1]["body"]["messages"][-1]
    assert len(_images(last)) == 1 and "could not be shown" in str(last["content"])
    assert "What do you think?" not in str(last["content"])
