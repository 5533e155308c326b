"""Question authors: the deterministic vocabulary author and the VLM author on a real server."""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path

import cv2
import numpy as np
import pytest

from eval_assets.schemas.endpoint import Endpoint
from eval_assets.vqa.authors import (
    AuthorConfig,
    AuthorConfigError,
    VLMAuthor,
    VocabularyAuthor,
    build_author,
    parse_author_reply,
)
from eval_assets.vqa.families import FAMILIES
from eval_assets.vqa.proposals import propose_frames, read_proposals, write_proposals
from eval_assets_tests.fakes.openai_server import (
    HttpError,
    OpenAICompatibleServer,
    RawResponse,
    Reply,
    planned_waits,
)
from eval_assets_tests.vqa.helpers import frame_image, make_frames_dir

VOCAB = ["red ball", "blue box", "green cylinder", "yellow box"]


def test_vocabulary_author_is_deterministic_and_covers_every_family() -> None:
    author = VocabularyAuthor(VOCAB, seed=3, max_groups_per_family=4, max_group_size=3)
    image = frame_image(0)
    first = author.propose(image, 5)
    assert first == author.propose(image, 5)
    assert first != author.propose(image, 6)  # groups are drawn per frame
    assert [p.ordinal for p in first] == list(range(len(first)))
    families = {p.family for p in first}
    assert families == set(FAMILIES)
    for p in first:
        rule = FAMILIES[p.family]
        assert rule.min_names <= len(p.object_names) <= rule.max_names
        assert len(set(p.object_names)) == len(p.object_names)
    # Single-object families ask about every name, present in the frame or not.
    presence = [p.object_names[0] for p in first if p.family == "presence"]
    assert presence == VOCAB


def test_vocabulary_author_limits_and_config_errors() -> None:
    author = VocabularyAuthor(VOCAB, families=["presence", "closest_object"],
                              max_names_per_family=2, max_groups_per_family=3)
    props = author.propose(frame_image(0), 0)
    assert sum(p.family == "presence" for p in props) == 2
    assert sum(p.family == "closest_object" for p in props) == 3
    with pytest.raises(AuthorConfigError, match="unknown families"):
        VocabularyAuthor(VOCAB, families=["colour"])
    with pytest.raises(AuthorConfigError, match="repeats"):
        VocabularyAuthor(["red ball", "Red ball"])
    with pytest.raises(AuthorConfigError, match="VLM_KEY_FOR_TEST"):
        build_author(AuthorConfig(author="vlm", vlm_base_url="http://127.0.0.1:9/v1",
                                  vlm_model="m", vlm_api_key_env="VLM_KEY_FOR_TEST"))


def test_parse_author_reply_forms() -> None:
    items, why = parse_author_reply('```json\n{"proposals": [{"family": "presence"}]}\n```')
    assert items == [{"family": "presence"}] and why is None
    assert parse_author_reply("[]") == ([], None)
    assert parse_author_reply("sure! here you go")[0] is None
    assert parse_author_reply('{"questions": []}')[0] is None
    assert parse_author_reply(None)[0] is None


def _decode_data_url(url: str) -> np.ndarray:
    prefix = "data:image/png;base64,"
    assert url.startswith(prefix)
    raw = np.frombuffer(base64.b64decode(url[len(prefix):]), dtype=np.uint8)
    return cv2.cvtColor(cv2.imdecode(raw, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)


def test_vlm_author_sends_the_image_only_and_parses_json(monkeypatch: pytest.MonkeyPatch) -> None:
    reply = json.dumps({"proposals": [
        {"family": "presence", "object_names": ["red ball"]},
        {"family": "closest_object", "object_names": ["chair", "table"]},
        {"family": "object_count"},  # malformed item: no object_names
        {"family": "telepathy", "object_names": ["x"]},  # parsed; the decider rejects it
    ]})
    monkeypatch.setenv("VLM_KEY_FOR_TEST", "secret-key")
    with OpenAICompatibleServer([Reply(reply)]) as srv:
        author = build_author(AuthorConfig(author="vlm", vlm_base_url=srv.base_url,
                                           vlm_model="author-model",
                                           vlm_api_key_env="VLM_KEY_FOR_TEST",
                                           vlm_max_retries=0))
        image = frame_image(2)
        props = author.propose(image, 9)
        (request,) = srv.requests
    assert request.headers["authorization"] == "Bearer secret-key"
    assert request.body["model"] == "author-model"
    user = request.body["messages"][-1]["content"]
    kinds = [part["type"] for part in user]
    assert kinds == ["image_url", "text"]
    assert np.array_equal(_decode_data_url(user[0]["image_url"]["url"]), image)
    # No evidence or vocabulary reaches the author: only family rules and the reply format.
    assert "red ball" not in json.dumps(request.body["messages"])
    assert [(p.family, p.object_names, p.error) for p in props] == [
        ("presence", ["red ball"], None),
        ("closest_object", ["chair", "table"], None),
        ("object_count", [], "malformed_author_reply"),
        ("telepathy", ["x"], None),
    ]
    assert all(p.frame_index == 9 and p.author == "vlm:author-model" for p in props)


def test_vlm_malformed_reply_and_failed_call_never_abort_the_run(tmp_path: Path) -> None:
    frames_dir, frames = make_frames_dir(tmp_path, [0, 1, 2])
    good = json.dumps([{"family": "presence", "object_names": ["red ball"]}])
    script = [Reply("I think there is a red ball."), HttpError(500), Reply(good)]
    with OpenAICompatibleServer(script) as srv:
        author = VLMAuthor(Endpoint(base_url=srv.base_url, model="m", max_retries=0, timeout_s=10))
        props = propose_frames(author, frames_dir, frames, max_proposals_per_frame=10)
        assert len(srv.requests) == 3
    assert [(p.frame_index, p.error) for p in props] == [
        (0, "malformed_author_reply"), (1, "author_call_failed"), (2, None)]
    assert "not JSON" in (props[0].error_detail or "")
    assert "red ball" in (props[0].error_detail or "")  # the raw reply is kept for the audit


def test_vlm_author_10_mb_reply_is_reply_too_large() -> None:
    huge = json.dumps([{"family": "presence", "object_names": ["x" * 10_000_000]}])
    script = [Reply(huge), RawResponse(200, json.dumps(
        {"choices": [{"message": {"content": huge}}]}).encode(), chunked=True)]
    with OpenAICompatibleServer(script) as srv:
        author = VLMAuthor(Endpoint(base_url=srv.base_url, model="m", max_retries=2, timeout_s=10))
        props = [author.propose(frame_image(0), i) for i in (0, 1)]
        author.close()
        assert len(srv.requests) == 2  # not retried
    for (prop,) in props:
        assert prop.error == "author_call_failed" and prop.object_names == []
        assert (prop.error_detail or "").startswith("reply_too_large: ")
    assert [author.calls[i].error_category for i in (0, 1)] == ["reply_too_large"] * 2


def test_vlm_author_records_usage_and_latency_and_retries_500() -> None:
    usage = {"prompt_tokens": 1200, "completion_tokens": 30, "total_tokens": 1230}
    good = json.dumps([{"family": "presence", "object_names": ["red ball"]}])
    with OpenAICompatibleServer([HttpError(500), Reply(good, delay_s=0.05, usage=usage),
                                 HttpError(400)]) as srv:
        author = VLMAuthor(Endpoint(base_url=srv.base_url, model="m", max_retries=2, timeout_s=10))
        ok = author.propose(frame_image(0), 4)
        failed = author.propose(frame_image(0), 5)
        author.close()
        assert len(srv.requests) == 3  # 500 retried once; 400 not retried
    assert [(p.family, p.error) for p in ok] == [("presence", None)]
    call = author.calls[4]
    assert call.attempts == 2 and call.usage is not None and call.usage.model_dump() == usage
    assert call.latency_s is not None and 0.04 <= call.latency_s <= call.wall_s
    assert failed[0].error == "author_call_failed"
    assert (failed[0].error_detail or "").startswith("client_error: HTTP 400")
    assert author.calls[5].attempts == 1 and author.calls[5].latency_s is not None


def test_vlm_author_retry_after_beyond_the_maximum_fails_at_once(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="eval_assets.openai_chat"), \
            OpenAICompatibleServer([HttpError(429, {"Retry-After": "100000"})]) as srv:
        author = VLMAuthor(Endpoint(base_url=srv.base_url, model="m", max_retries=2, timeout_s=10))
        (prop,) = author.propose(frame_image(0), 0)
        author.close()
    assert planned_waits(caplog.records) == []  # no wait at all, whatever the clock says
    assert (prop.error_detail or "").startswith("retry_after_too_long: ")
    assert "100000 s" in (prop.error_detail or "")


def test_proposals_round_trip_and_limit(tmp_path: Path) -> None:
    frames_dir, frames = make_frames_dir(tmp_path, [3, 1])
    config = AuthorConfig(vocabulary=VOCAB, max_proposals_per_frame=5)
    author = build_author(config)
    props = propose_frames(author, frames_dir, frames, config.max_proposals_per_frame)
    assert [p.frame_index for p in props][:1] == [1]  # frame order, not input order
    per_frame = [p for p in props if p.frame_index == 1]
    assert [p.error for p in per_frame[:5]] == [None] * 5
    assert {p.error for p in per_frame[5:]} == {"over_proposal_limit"}
    out = tmp_path / "proposals"
    path = write_proposals(out, props, config)
    first = path.read_bytes()
    assert read_proposals(out) == props
    write_proposals(out, props, config)
    assert path.read_bytes() == first
    summary = json.loads((out / "summary.json").read_text())
    assert summary["author_errors"]["over_proposal_limit"] == len(props) - 10
