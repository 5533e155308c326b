"""The judge's rubric prompt, with the structure of NVIDIA AVLM's ``avlm/evals/utils/prompt.py``.

System message: the evaluator role, then an optional domain paragraph, then (placement ``system``)
the event metadata under ``[Context]``. User message: task, **Ground Truth**, **Conversation**,
**Prediction**, **Metadata** (placement ``user``), guidance, the 1-10 rubric and the reply format
``{score, reasoning, strengths, weaknesses, metadata_alignment}``; optional extra guidance last.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal

MetadataPlacement = Literal["auto", "user", "system", "omit"]

# Above this many rendered characters, ``auto`` moves metadata to the system message (AVLM's rule).
AUTO_SYSTEM_THRESHOLD = 1500

SYSTEM_PROMPT = (
    "You are an expert evaluator of vision-language model answers. Score each answer accurately "
    "and fairly against the reference answer and the criteria you are given."
)

_USER_TEMPLATE = """\
Compare the model's prediction with the ground truth for the question in the conversation. The \
ground truth is the primary standard. The metadata, when present, is trusted evidence recorded \
with the scene: use it to resolve ambiguity and to catch claims it directly contradicts, but do \
not invent contradictions from fields that are ambiguous or silent.

If no metadata is provided, score on prediction versus ground truth alone and treat specific \
details the ground truth does not support as unsupported.

IMPORTANT: Respond only with valid JSON. The "score" field must be an integer from 1 to 10, where \
10 is best; never 0.

**Ground Truth**
{{GT}}

**Conversation**
{{CONVERSATION}}

**Prediction**
{{PREDICTION}}

**Metadata**
{{METADATA}}

**Evaluation Guidance:**
- Primary: agreement with the ground truth, in meaning and in facts
- Secondary: consistency with the metadata when present; penalise claims it directly contradicts
- Multiple-choice answers: if the ground truth reads "(A) ...", "(B) ...", etc. and the \
prediction gives only the matching letter ("B", "B.", "The answer is B."), score it as a full \
match
- Extra details that neither the ground truth nor the metadata support count against the \
prediction; details the metadata supports do not
- Without metadata, be strict about unsupported additions

**Scoring (1-10, integers):**
- 10: Matches the ground truth; no contradiction with the metadata
- 9: Very strong match; at most a trivial omission
- 8: Minor omissions or wording differences; consistent with the metadata
- 7: Main point right; some errors or unsupported details
- 6: Partly right; noticeable errors or contradictions
- 1-5: Poor match, or contradicted by the metadata

Respond ONLY with a JSON object of the form:
{
  "score": <1-10>,
  "reasoning": "<brief, precise justification>",
  "strengths": ["<strength 1>", "<strength 2>"],
  "weaknesses": ["<weakness 1>", "<weakness 2>"],
  "metadata_alignment": "<note on consistency with the metadata>"
}
"""

_SLOT_RE = re.compile(r"\{\{(GT|CONVERSATION|PREDICTION|METADATA)\}\}")


def system_prompt(domain: str | None) -> str:
    """The evaluator role, followed by the domain paragraph when one is configured."""
    parts = [SYSTEM_PROMPT]
    if domain and domain.strip():
        parts.append(domain.strip())
    return "\n\n".join(parts)


def render_metadata(metadata: Any, *, max_chars: int = 0, compact: bool = True) -> str | None:
    """Metadata as JSON text (compact or indented), truncated past ``max_chars`` (0: never).

    None when there is nothing to show (null, ``{}`` or ``[]``).
    """
    if metadata is None or metadata == {} or metadata == []:
        return None
    try:
        if compact:
            rendered = json.dumps(metadata, ensure_ascii=False, separators=(",", ":"))
        else:
            rendered = json.dumps(metadata, ensure_ascii=False, indent=2)
    except (TypeError, ValueError):
        rendered = str(metadata)
    if max_chars and len(rendered) > max_chars:
        return rendered[:max_chars] + "\n... [truncated]"
    return rendered


def render_conversation(turns: Any) -> str:
    """The prompt the model saw: a plain string as is, structured turns as JSON."""
    if isinstance(turns, str):
        return turns
    return json.dumps(turns, ensure_ascii=False)


def user_prompt(ground_truth: str, conversation: str, prediction: str, metadata: str | None,
                extra_guidance: str | None = None) -> str:
    """The rubric user message; slots are filled in one pass so answers cannot inject slots."""
    values = {"GT": ground_truth, "CONVERSATION": conversation, "PREDICTION": prediction,
              "METADATA": metadata or ""}
    prompt = _SLOT_RE.sub(lambda m: values[m.group(1)], _USER_TEMPLATE)
    if extra_guidance and extra_guidance.strip():
        prompt += ("\n\n**Additional Evaluation Guidance (takes precedence):**\n"
                   + extra_guidance.strip())
    return prompt


def choose_placement(placement: MetadataPlacement, rendered: str | None) -> str:
    """Resolve ``auto``: system when the rendered metadata exceeds 1500 characters, else user."""
    if placement != "auto":
        return placement
    return "system" if rendered and len(rendered) > AUTO_SYSTEM_THRESHOLD else "user"


def build_messages(
    *,
    ground_truth: str,
    conversation: Any,
    prediction: str,
    metadata: Any,
    placement: MetadataPlacement = "auto",
    domain: str | None = None,
    extra_guidance: str | None = None,
    metadata_max_chars: int = 0,
    metadata_compact: bool = True,
) -> tuple[list[Mapping[str, str]], str]:
    """The chat messages for one judgement, and the metadata placement actually used."""
    rendered = render_metadata(metadata, max_chars=metadata_max_chars, compact=metadata_compact)
    used = choose_placement(placement, rendered)
    system = system_prompt(domain)
    if used == "system" and rendered:
        system = f"{system}\n\n[Context]\n{rendered}"
    user = user_prompt(ground_truth, render_conversation(conversation), prediction,
                       rendered if used == "user" else None, extra_guidance)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}], used
