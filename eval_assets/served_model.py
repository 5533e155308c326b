"""Whether the model that answered is the model declared: the server's word checked.

Every chat completion names the model that produced it (its ``model`` field), and a server, or a
proxy falling back to another deployment, may answer as another model than the one asked for.
Each call's record keeps that name (``served_model``), the capability preflight keeps what its
probes were answered as and what ``GET /v1/models`` listed, and the run's summary and the cell's
results count the names (``served_models``) and say whether any is another model
(``served_mismatch``); the run warns (:class:`ServedModelWarning`) and the report marks the cell.

The match rule (:func:`same_model`), since servers name the declared model harmlessly otherwise:

1. the same name, case and surrounding spaces aside;
2. the same name but for a leading path on one side only (``openai/gpt-4o`` and ``gpt-4o``,
   ``Qwen/Qwen2-VL-7B-Instruct`` and ``qwen2-vl-7b-instruct``);
3. one name is the other followed by a date or version suffix after ``-``, ``@`` or ``:``:
   a date (``gpt-4o-2024-08-06``, ``claude-3-5-sonnet-20241022``), a number (``-0613``,
   ``gemini-1.5-pro-002``, ``-v2.1``) or ``latest`` (``llava:latest``); a word is another
   model (``gpt-4o-mini``, ``gpt-4o-audio-preview``, ``o1-preview`` are not ``gpt-4o``/``o1``);
4. the endpoint's ``/v1/models`` lists one of the names among the other's ``aliases`` (as
   llama.cpp's server does for ``--alias``);
5. a served name that is a weights file (``.gguf``, ``.safetensors``, ``.bin``, ``.pt``,
   ``.pth``, ``.onnx``, ``.llamafile``, or an absolute path) matches when it is the only model
   the endpoint listed at preflight (a one-model server such as llama.cpp names the file it
   loaded, whatever the request said), or when its file name without the extension matches by
   rules 1 to 3.

A reply without a ``model`` field is not counted: there is nothing to check.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

ListedModels = Mapping[str, list[str]]
"""What ``GET /v1/models`` listed: each model id with its aliases (empty when none given)."""

_VERSION = r"(?:\d{4}-\d{2}-\d{2}|v?\d+(?:\.\d+)*|latest)"
_SUFFIX = re.compile(rf"(?:[-@:]{_VERSION})+")
_WEIGHTS = (".gguf", ".safetensors", ".bin", ".pt", ".pth", ".onnx", ".llamafile")


class ServedModelWarning(UserWarning):
    """Replies came from another model than the one declared (see the module's match rule)."""


def _norm(name: str) -> str:
    return name.strip().lower()


def is_weights_file(name: str) -> bool:
    """Whether ``name`` is a file a server loaded rather than a model id (rule 5)."""
    name = _norm(name)
    return name.endswith(_WEIGHTS) or name.startswith(("/", "./", "~")) or bool(
        re.match(r"^[a-z]:[\\/]", name))


def _versioned(longer: str, shorter: str) -> bool:
    return longer.startswith(shorter) and bool(_SUFFIX.fullmatch(longer[len(shorter):]))


def _named_alike(declared: str, served: str) -> bool:
    """Rules 1 to 3 on normalised names."""
    if "/" not in declared or "/" not in served:  # a path on one side only is dropped
        declared, served = declared.rsplit("/", 1)[-1], served.rsplit("/", 1)[-1]
    return (declared == served or _versioned(served, declared)
            or _versioned(declared, served))


def same_model(declared: str, served: str, listed: ListedModels | None = None) -> bool:
    """Whether a reply naming ``served`` answers for the ``declared`` model, by the module's
    rule; ``listed`` is what the endpoint's ``/v1/models`` listed at preflight (None: unknown)."""
    want, got = _norm(declared), _norm(served)
    if _named_alike(want, got):
        return True
    listed = {_norm(k): [_norm(a) for a in v] for k, v in (listed or {}).items()}
    aliases = set(listed.get(got, [])) | {k for k, v in listed.items() if got in v}
    if any(_named_alike(want, alias) for alias in aliases):
        return True
    if is_weights_file(got):
        stem = re.split(r"[\\/]", got)[-1]
        stem = next((stem[:-len(ext)] for ext in _WEIGHTS if stem.endswith(ext)), stem)
        return list(listed) == [got] or _named_alike(want, stem)
    return False


def count_served(names: Iterable[str | None]) -> dict[str, int]:
    """How many replies named each model (replies naming none are left out), by name."""
    return dict(sorted(Counter(n for n in names if n).items()))


def others(declared: str, served: Mapping[str, int],
           listed: ListedModels | None = None) -> dict[str, int]:
    """Of ``served`` (:func:`count_served`), the names that are another model than
    ``declared``."""
    return {name: n for name, n in served.items() if not same_model(declared, name, listed)}


def mismatch_message(who: str, declared: str, served: Mapping[str, int],
                     listed: ListedModels | None = None) -> str | None:
    """The named warning when some of ``served`` are another model than ``declared`` (None when
    every reply is the declared model's); ``who`` says whose replies (model and recording)."""
    other = others(declared, served, listed)
    if not other:
        return None
    total = sum(served.values())
    names = ", ".join(f"{name!r} ({n})" for name, n in other.items())
    return (f"served model mismatch: {who}: {sum(other.values())} of {total} replies came from "
            f"another model than the declared {declared!r}: {names}; their answers are "
            "credited to the declared model though another one gave them. Fix: check the "
            "endpoint (a proxy's fallback or router, another deployment behind the name, the "
            "model the server loaded), then rerun those cases")


def parse_listing(document: object) -> dict[str, list[str]] | None:
    """``GET /v1/models``'s body as each model id with its aliases (llama.cpp lists them; other
    servers none), or None when the body is not such a listing."""
    data = document.get("data") if isinstance(document, Mapping) else None
    if not isinstance(data, list):
        return None
    listed: dict[str, list[str]] = {}
    for entry in data:
        if isinstance(entry, Mapping) and isinstance(entry.get("id"), str):
            aliases = entry.get("aliases")
            listed[entry["id"]] = sorted(a for a in aliases if isinstance(a, str)) if isinstance(
                aliases, list) else []
    return dict(sorted(listed.items()))


@dataclass(frozen=True)
class ServedCheck:
    """The replies' model names counted, and whether any is another model than the declared."""

    served_models: dict[str, int]
    mismatch: bool
    warning: str | None


def check_served(who: str, declared: str, names: Iterable[str | None],
                 listed: ListedModels | None = None) -> ServedCheck:
    """``names`` (each reply's ``served_model``) counted and checked against ``declared``;
    ``warning`` is :func:`mismatch_message`'s line (None: no reply was another model's)."""
    served = count_served(names)
    warning = mismatch_message(who, declared, served, listed)
    return ServedCheck(served_models=served, mismatch=warning is not None, warning=warning)


class _Reply(Protocol):
    @property
    def model(self) -> str: ...

    @property
    def served_model(self) -> str | None: ...


def served_in_run(who: str, records: Iterable[_Reply],
                  listed: ListedModels | None = None) -> ServedCheck:
    """:func:`check_served` of a run's stored records, each checked against the model its run
    declared (the records' ``model``)."""
    records = list(records)
    declared = Counter(r.model for r in records).most_common(1)[0][0] if records else ""
    return check_served(who, declared, (r.served_model for r in records), listed)
