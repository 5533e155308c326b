"""Fields that NAME an environment variable (``api_key_env`` and kin) hold a name, never a key.

A key pasted where the variable's name goes would otherwise travel everywhere a name may go: into
error messages ("the variable 'sk-…' is not set"), the run folder's client settings, Dagster's run
config and event log. :func:`check_env_var_name` refuses such a value at the first validation,
and its message never repeats the value: at most a masked prefix and the length
(:func:`masked`), which tell the user which value is meant without disclosing it.
"""

from __future__ import annotations

import re

# A portable variable name (POSIX: letters, digits, underscore, not starting with a digit): the
# only kind a shell can export, so anything else cannot be what the user meant to name.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# Prefixes of the keys of common providers (OpenAI/Anthropic/DeepSeek sk-, Hugging Face hf_,
# Groq gsk_, GitHub ghp_/github_pat_, Google AIza, AWS AKIA/ASIA, xAI xai-, NVIDIA nvapi-,
# Replicate r8_, GitLab glpat-, Slack xox?-). Case-sensitive, as the providers write them: the
# variable HF_TOKEN is a name, hf_AbC… a key.
_KEY_PREFIXES = ("sk-", "sk_", "pk_", "rk_", "hf_", "gsk_", "ghp_", "gho_", "ghs_",
                 "github_pat_", "AIza", "AKIA", "ASIA", "xai-", "nvapi-", "r8_", "glpat-",
                 "xoxb-", "xoxp-", "pplx-", "csk-")
# Variable names are words; keys are long runs of mixed-case letters and digits.
_LONG_RANDOM = 32


def masked(value: str) -> str:
    """``value`` shown without disclosing it: its first three characters, ``…``, its length.

    Three characters name a provider's prefix (``sk-``) and no more of the key.
    """
    return f"{value[:3]}… ({len(value)} characters)"


def looks_like_key(value: str) -> bool:
    """Whether ``value`` is probably a secret rather than a variable's name.

    True for a known provider prefix followed by more text, and for a long mixed-case run with
    digits (a variable name is words: ``OPENAI_API_KEY``, ``my_token_2``).
    """
    if any(value.startswith(p) and len(value) > len(p) + 8 for p in _KEY_PREFIXES):
        return True
    if len(value) >= _LONG_RANDOM and any(c.isdigit() for c in value) \
            and any(c.islower() for c in value) and any(c.isupper() for c in value):
        return True
    return not _NAME.fullmatch(value) and len(value) >= _LONG_RANDOM


def check_env_var_name(value: str, field: str, example: str = "OPENAI_API_KEY") -> str:
    """``value`` when it can name an environment variable (or is empty); else ``ValueError``.

    ``field`` is the field as the user wrote it (``api_key_env``, ``--vlm-api-key-env``), named
    by the message with the fix; ``example`` is the variable the fix suggests. The message shows
    the value only masked (:func:`masked`), whatever is wrong with it.
    """
    if not value or (_NAME.fullmatch(value) and not looks_like_key(value)):
        return value
    fix = (f"put the key in an environment variable (export {example}=<the key>) and name it "
           f"({field}: {example})")
    if looks_like_key(value):
        raise ValueError(f"{field} is {masked(value)}: this looks like a key, not a variable "
                         f"name; {fix}")
    raise ValueError(f"{field} is {masked(value)}, which is not an environment variable name "
                     f"(letters, digits and _, not starting with a digit); {fix}")
