"""Frontend simulator served by a vision-language model over an OpenAI-compatible endpoint.

As in the paper, the model plays the person who wants the page: it sees the agent's screenshot
and the reference screenshot (as ``image_url`` parts with PNG data URLs) and describes the most
outstanding differences. Works with any server speaking the chat-completions protocol with image
inputs (vLLM serving Qwen2-VL / Llama-3.2-Vision, OpenAI, llama.cpp with a multimodal projector).
Timeouts and retries come from the shared :class:`OpenAIChatSimulator` (the ``openai`` client's
own backoff); the prompt wording is ours.
"""

from __future__ import annotations

import base64
import io
from typing import Any

from colbench_gym.simulators.base import Dialogue
from colbench_gym.simulators.leak_guard import with_retry_note
from colbench_gym.simulators.openai_chat import OpenAIChatSimulator
from colbench_gym.simulators.prompts import person_reads_dialogue

FRONTEND_SYSTEM_PROMPT = """\
You are role-playing a person who asked an AI assistant to build a web page for them. Your \
opening request was:

{problem_description}

You have a clear picture of the page you want: it is the REFERENCE screenshot you will be shown. \
The assistant cannot see it. Each time the assistant shows you its attempt you get two images: \
first the assistant's page, then the reference.

Rules for every reply:
- Speak as this person, in plain words, about what you SEE: colours, layout, sizes, spacing, \
fonts, images, text and the order of the parts of the page.
- Name the few most outstanding differences between the assistant's page and the reference, \
biggest first, concretely (e.g. "the top bar should be dark green with white links").
- Never write HTML or CSS, never mention a "reference image" or screenshots, and keep it to a \
few sentences.
- If the assistant showed no page, answer its question from what the reference looks like."""

NO_PAGE_NOTE = ("(The assistant did not show a page this turn. Only the reference page you have in mind is "
                "attached.)")
RENDER_ERROR_NOTE = "(The assistant's page failed to display: {error}. Only your reference page is attached.)"
#: The last turn of a request that holds nothing the agent made (the last reading budget, 0).
UNREAD_PAGE_NOTE = "(The assistant's page could not be shown. Only the reference page you have in mind is attached.)"


def png_data_url(image: Any, max_width: int = 1024, max_height: int = 2048) -> str:
    """A PIL image as a ``data:image/png;base64,...`` URL, downscaled to keep requests small."""
    im = image.convert("RGB")
    scale = min(1.0, max_width / im.width, max_height / im.height)
    if scale < 1.0:
        im = im.resize((max(1, int(im.width * scale)), max(1, int(im.height * scale))))
    buf = io.BytesIO()
    im.save(buf, format="PNG", optimize=True)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


class OpenAIFrontendSimulator(OpenAIChatSimulator):
    """A VLM comparing the agent's screenshot with the reference; see module docstring.

    Extra args (beside :class:`OpenAIChatSimulator`'s ``model``, ``base_url``, ``api_key``,
    ``timeout``, ``max_retries``, sampling): ``max_image_width`` / ``max_image_height`` bound
    the screenshots sent; ``image_detail`` is passed as the OpenAI ``detail`` field.
    """

    kind = "frontend"

    def __init__(self, *args: Any, max_image_width: int = 1024, max_image_height: int = 2048,
                 image_detail: str | None = None, max_tokens: int = 300, **kwargs: Any) -> None:
        super().__init__(*args, max_tokens=max_tokens, **kwargs)
        self.max_image_width, self.max_image_height = max_image_width, max_image_height
        self.image_detail = image_detail

    def _image_part(self, image: Any) -> dict[str, Any]:
        url: dict[str, Any] = {"url": png_data_url(image, self.max_image_width, self.max_image_height)}
        if self.image_detail:
            url["detail"] = self.image_detail
        return {"type": "image_url", "image_url": url}

    def build_messages(self, task, dialogue: Dialogue, budget: int | None = None,
                       **context: Any) -> list[dict[str, Any]]:
        """The chat request: system prompt, earlier turns as text, the last turn with the images; the
        dialogue's text read within ``budget`` UTF-8 bytes (:func:`person_reads_dialogue`)."""
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": FRONTEND_SYSTEM_PROMPT.format(problem_description=task.problem_description)}]
        turns = dialogue[1:]
        read = person_reads_dialogue(turns, budget)
        for m, text in zip(turns[:-1], read[:-1]):
            messages.append({"role": "user" if m["role"] == "assistant" else "assistant", "content": text})
        last = read[-1] if turns else ""
        parts: list[dict[str, Any]] = [{"type": "text", "text": "The assistant says:\n" + last}]
        reference = context.get("reference_image")
        agent = context.get("agent_image")
        if budget == 0:  # nothing the agent made: not its page, not its page's error either
            parts.append({"type": "text", "text": UNREAD_PAGE_NOTE})
        elif agent is not None and not context.get("agent_render_error"):
            parts.append({"type": "text", "text": "Image 1: the assistant's page."})
            parts.append(self._image_part(agent))
            parts.append({"type": "text", "text": "Image 2: the page you want."})
        else:
            note = (RENDER_ERROR_NOTE.format(error=context["agent_render_error"]) if context.get("agent_render_error")
                    else NO_PAGE_NOTE)
            parts.append({"type": "text", "text": note + "\nThe page you want:"})
        if reference is not None:
            parts.append(self._image_part(reference))
        messages.append({"role": "user", "content": parts})
        return messages

    def respond(self, task, dialogue: Dialogue, **context: Any) -> str:
        # with the leak guard's instruction when it withheld the previous reply
        return self._ask(lambda budget: with_retry_note(self.build_messages(task, dialogue, budget, **context), context,
                                                        "frontend"),
                         retry=int(context.get("leak_retry") or 0))
