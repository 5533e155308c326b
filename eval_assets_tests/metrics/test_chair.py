"""CHAIR: the seed sample, the packaged synonym list and the free-text mode."""

from __future__ import annotations

import pytest

from eval_assets.metrics.chair import (
    chair_from_texts,
    chair_metrics,
    load_coco_synonyms,
    parse_synonyms,
    tokenize_caption,
)

SEED_MAP = {
    "man": "person",
    "woman": "person",
    "horse": "horse",
    "dog": "dog",
    "frisbee": "frisbee",
}


def test_seed_sample() -> None:
    captions = [["a", "man", "riding", "a", "horse"], ["dog", "dog", "frisbee"]]
    ground_truth = [["person", "horse"], ["dog"]]
    assert chair_metrics(captions, ground_truth, SEED_MAP) == [0.25, 0.5, ["frisbee"]]


def test_dedup_happens_after_mapping_and_rates_round_to_four() -> None:
    # "man" and "woman" are one mention of "person"; 1 of 3 deduplicated mentions hallucinated.
    captions = [["man", "woman", "horse", "dog"]]
    assert chair_metrics(captions, [["person", "horse"]], SEED_MAP) == [0.3333, 1.0, ["dog"]]


def test_empty_inputs_give_zero() -> None:
    assert chair_metrics([], [], SEED_MAP) == [0.0, 0.0, []]
    assert chair_metrics([["nothing", "here"]], [["dog"]], SEED_MAP) == [0.0, 0.0, []]


def test_length_mismatch_is_rejected() -> None:
    with pytest.raises(ValueError, match="1 captions and 2 ground-truth lists"):
        chair_metrics([["dog"]], [["dog"], ["cat"]], SEED_MAP)


def test_packaged_synonyms() -> None:
    synonyms = load_coco_synonyms()
    assert len(set(synonyms.values())) == 80
    assert synonyms["man"] == "person"
    assert synonyms["person"] == "person"
    # The file has "scooter,  motor bike" (two spaces): entries are stripped.
    assert synonyms["motor bike"] == "motorcycle"
    assert " motor bike" not in synonyms
    assert synonyms["teddy bear"] == "teddy bear"
    assert synonyms["iphone"] == "cell phone"
    assert all(k == k.strip() and v == v.strip() for k, v in synonyms.items())


def test_parse_synonyms_rejects_bad_separators() -> None:
    with pytest.raises(ValueError, match=r"syn\.txt:2: .*', '"):
        parse_synonyms("dog, puppy\ncat,kitten\n", source="syn.txt")


def test_tokenize_caption() -> None:
    tokens = tokenize_caption("Two Teddy bears, a hot-dog and three dogs; the traffic lights.")
    assert tokens == [
        "two", "teddy bear", "a", "hot dog", "and", "three", "dog", "the", "traffic light",
    ]  # fmt: skip
    assert tokenize_caption("Men and women near buses, knives and mice!") == [
        "man", "and", "woman", "near", "bus", "knife", "and", "mouse",
    ]  # fmt: skip
    # Only listed names are singularised: "doors" is not a COCO name and keeps its form.
    assert tokenize_caption("Wine glasses by the glass doors.") == [
        "wine glass", "by", "the", "glass", "doors",
    ]  # fmt: skip


def test_chair_from_texts() -> None:
    texts = [
        "Two teddy bears sit on a couch next to a dog.",
        "A man holds a cell phone. The hot dogs are on the dining table!",
        "An empty corridor.",
    ]
    ground_truth = [["teddy bear", "couch"], ["woman", "dining table", "hot dog"], []]
    report = chair_from_texts(texts, ground_truth)
    first, second, third = report.captions
    assert first.mentioned == ["teddy bear", "couch", "dog"]
    assert first.hallucinated == ["dog"]
    # "man" and "woman" are both "person" in the ground truth after mapping.
    assert second.ground_truth == ["person", "dining table", "hot dog"]
    assert second.mentioned == ["person", "cell phone", "hot dog", "dining table"]
    assert second.hallucinated == ["cell phone"]
    assert third.mentioned == [] and third.hallucinated == []
    assert (report.n_mentions, report.n_hallucinated_mentions) == (7, 2)
    assert report.chair_i == round(2 / 7, 4) == 0.2857
    assert report.chair_s == round(2 / 3, 4) == 0.6667
    assert report.objects == ["cell phone", "dog"]
    # Same numbers as the seed function on the tokenized captions.
    synonyms = load_coco_synonyms()
    truths = [[synonyms.get(n, n) for n in names] for names in ground_truth]
    assert chair_metrics([tokenize_caption(t) for t in texts], truths, synonyms) == [
        report.chair_i,
        report.chair_s,
        report.objects,
    ]


def test_hot_dog_is_not_a_dog() -> None:
    report = chair_from_texts(["A hot dog on a plate."], [["hot dog"]])
    assert report.captions[0].mentioned == ["hot dog"]
    assert report.chair_i == 0.0
