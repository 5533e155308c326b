"""SmolLM2's converted copy in the user cache is the model transformers converts from the GGUF."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval_assets.local_models.smollm2 import (
    converted_dir,
    load_tokenizer_and_model,
    smollm2_gguf_path,
)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_kept_copy_has_the_same_tensors_and_tokens(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.setenv("EVAL_ASSETS_CACHE", str(tmp_path))
    gguf = smollm2_gguf_path()
    folder = converted_dir(gguf)
    assert folder.is_relative_to(tmp_path) and not folder.exists()
    tokenizer, model = load_tokenizer_and_model(gguf)  # converted from the GGUF, then kept
    assert (folder / "model.safetensors").is_file()
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]  # no staging left
    kept_tokenizer, kept_model = load_tokenizer_and_model(gguf)
    fresh, kept = model.state_dict(), kept_model.state_dict()
    assert fresh.keys() == kept.keys()
    assert all(torch.equal(fresh[name], kept[name]) for name in fresh)
    assert kept_model.config.tie_word_embeddings == model.config.tie_word_embeddings
    chat = [{"role": "system", "content": "You are a judge."},
            {"role": "user", "content": "Is the red ball left of the box? Choices: yes, no ü 日本"}]
    ids = tokenizer.apply_chat_template(chat, add_generation_prompt=True)
    assert kept_tokenizer.apply_chat_template(chat, add_generation_prompt=True) == ids
    assert kept_tokenizer.all_special_ids == tokenizer.all_special_ids
    assert kept_tokenizer.eos_token_id == tokenizer.eos_token_id
