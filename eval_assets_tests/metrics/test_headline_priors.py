"""The prior-free headline with planted priors: whatever a family's answer mix, an answer that
ignores the image (a constant, the family's most common answer, a median, no answer) scores the
chance exactly and a random pick in expectation; seeing scores above; a real leak is not hidden
(the bias audit's job); intervals are the paired, frame-clustered delta-method ones."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence

import pytest

from eval_assets.metrics.baselines import frequency_cases
from eval_assets.metrics.headline import (
    FamilyScore,
    HeadlineCase,
    family_mean,
    headline,
    headline_difference,
    score_families,
)
from eval_assets.metrics.numeric_rules import case_score
from eval_assets.metrics.stats import WILSON_Z

YES_NO = ("yes", "no")
COUNTS = ("one", "two", "three", "four or more")
THIRDS = ("left", "center", "right")
FRAMES = 60


def planted(seed: int = 7) -> list[HeadlineCase]:
    """Per frame: 4 presence cases, 95 % "no"; one object_count case, 90 % "one"; one
    horizontal_direction case, 60 / 30 / 10; one distance in metres (log-uniform 0.5-8 m)."""
    rng = random.Random(seed)
    out = []
    for frame in range(FRAMES):
        for i in range(4):
            gold = "yes" if rng.random() < 0.05 else "no"
            out.append(HeadlineCase(key=f"p{frame}-{i}", family="presence", frame=frame,
                                    gold=gold, choices=YES_NO))
        out.append(HeadlineCase(key=f"c{frame}", family="object_count", frame=frame,
                                gold="one" if rng.random() < 0.9 else "two", choices=COUNTS))
        draw = rng.random()
        gold = "left" if draw < 0.6 else "center" if draw < 0.9 else "right"
        out.append(HeadlineCase(key=f"h{frame}", family="horizontal_direction", frame=frame,
                                gold=gold, choices=THIRDS))
        target = round(0.5 * 16 ** rng.random(), 2)
        out.append(HeadlineCase(key=f"d{frame}", family="pair_distance_m", frame=frame,
                                gold=f"{target!r}", kind="mra", target=target, unit="m"))
    return out


def answered(cases: Sequence[HeadlineCase], choose: Callable[[HeadlineCase], str | None],
             number: Callable[[HeadlineCase], float | None] = lambda c: None,
             ) -> list[HeadlineCase]:
    """``cases`` answered: a choice case with ``choose`` (None: no choice read), a numeric case
    with ``number`` (None: no number read), scored as the numeric metric scores it."""
    out = []
    for c in cases:
        if c.kind == "mra":
            value = number(c)
            assert c.target is not None
            out.append(HeadlineCase(**{**c.__dict__, "number": value, "score": 0.0 if value is None
                                       else case_score(value, c.target, c.family, c.unit)}))
        else:
            out.append(HeadlineCase(**{**c.__dict__, "predicted": choose(c)}))
    return out


def old_headline(cases: Sequence[HeadlineCase]) -> float:
    """The headline before issue 41: the mean of raw family accuracies and MRAs."""
    means = []
    for f in sorted({c.family for c in cases}):
        mine = [c for c in cases if c.family == f]
        means.append(sum(c.score if c.kind == "mra" else float(c.predicted == c.gold)
                         for c in mine) / len(mine))
    return sum(means) / len(means)


def uniform(seed: int) -> Callable[[HeadlineCase], str | None]:
    """A seeded uniform pick among each case's choices."""
    rng = random.Random(seed)
    return lambda c: rng.choice(c.choices)


PRIORS: dict[str, Callable[[HeadlineCase], str | None]] = {
    "constant yes": lambda c: "yes" if "yes" in c.choices else c.choices[0],
    "constant no / first": lambda c: "no" if "no" in c.choices else c.choices[0],
    "constant last": lambda c: c.choices[-1],
    "no answer": lambda c: None,
}


@pytest.mark.parametrize("name", sorted(PRIORS))
def test_a_constant_answer_scores_the_chance_exactly(name: str) -> None:
    cases = answered(planted(), PRIORS[name])
    mean = headline(cases)
    assert mean is not None and mean.chance is not None and mean.caa is not None
    assert mean.n_families == 4 and mean.uninformative == []
    assert mean.mean == pytest.approx(mean.chance, abs=1e-12)
    assert mean.caa == pytest.approx(0.0, abs=1e-12)
    # Exact on any sample: its interval has no width.
    assert mean.ci_low == pytest.approx(mean.mean, abs=1e-12)
    assert mean.ci_high == pytest.approx(mean.mean, abs=1e-12)
    for family in mean.families:
        assert family.score == pytest.approx(family.chance, abs=1e-12)


def test_the_frequency_guesser_scores_the_chance_though_raw_accuracy_rewards_it() -> None:
    cases = planted()
    guessed = frequency_cases(cases)
    mean = headline(guessed)
    assert mean is not None and mean.chance is not None
    assert mean.mean == pytest.approx(mean.chance, abs=1e-12) and mean.caa == pytest.approx(0.0)
    # The chance: presence 1/2, object_count 1/4, direction 1/3, the median's MRA for distances.
    scores = {f.family: f for f in mean.families}
    assert scores["presence"].chance == pytest.approx(0.5)
    assert scores["object_count"].chance == pytest.approx(0.25)
    assert scores["horizontal_direction"].chance == pytest.approx(1 / 3)
    assert 0.05 < (scores["pair_distance_m"].chance or 0) < 0.6
    # What the prior bought before: the mean of raw family scores is far above that chance.
    assert scores["presence"].raw is not None and scores["presence"].raw > 0.9
    assert old_headline(guessed) - mean.chance > 0.25


def test_a_random_pick_scores_the_chance_in_expectation() -> None:
    cases = planted()
    means, chance = [], None
    for seed in range(8):
        mean = headline(answered(cases, uniform(seed)))
        assert mean is not None and mean.ci_low is not None and mean.ci_high is not None
        chance = mean.chance
        assert mean.caa is not None and abs(mean.caa) < 0.12
        means.append(mean.mean)
    assert chance is not None and abs(sum(means) / len(means) - chance) < 0.03
    # Beside it the frequency guesser, exactly at the chance: within 5 points.
    frequency = headline(frequency_cases(cases))
    assert frequency is not None and abs(sum(means) / len(means) - frequency.mean) < 0.05


def test_seeing_scores_above_the_chance_and_worse_numbers_below() -> None:
    cases = planted()
    perfect = headline(answered(cases, lambda c: c.gold, lambda c: c.target))
    assert perfect is not None and perfect.mean == pytest.approx(1.0) and perfect.caa == 1.0
    # Numbers ten times too large score below the median's: a bad reading is not a prior.
    wild = score_families(answered(cases, lambda c: None, lambda c: (c.target or 0) * 10))
    distance = next(f for f in wild if f.family == "pair_distance_m")
    assert distance.score is not None and distance.chance is not None
    assert distance.score < distance.chance - 0.05
    # Seeing presence only (every other family blind): above chance by presence's share.
    partial = headline(answered(cases, lambda c: c.gold if c.family == "presence" else None))
    assert partial is not None and partial.chance is not None
    assert partial.mean == pytest.approx(partial.chance + 0.5 / 4)


def test_binary_family_is_balanced_accuracy_with_the_hand_interval() -> None:
    # 30 "yes" (20 answered yes) and 70 "no" (7 answered yes), one case per frame.
    cases = [HeadlineCase(key=i, family="presence", frame=i, gold="yes" if i < 30 else "no",
                          choices=YES_NO, predicted="yes" if i < 20 or 30 <= i < 37 else "no")
             for i in range(100)]
    (family,) = score_families(cases)
    tpr, fpr = 20 / 30, 7 / 70
    assert family.score == pytest.approx((tpr + (1 - fpr)) / 2)  # balanced accuracy
    assert family.raw == pytest.approx((20 + 63) / 100) and family.chance == 0.5
    plug_in = tpr * (1 - tpr) / 30 + fpr * (1 - fpr) / 70
    # The floor: the variance were "yes" given at its rate (27 %) whatever the gold.
    null = 0.27 * 0.73 * (1 / 30 + 1 / 70)
    assert null > plug_in
    se = 0.5 * math.sqrt(100 / 99 * max(plug_in, null))
    assert family.score is not None
    assert family.ci_low == pytest.approx(family.score - WILSON_Z * se)
    assert family.ci_high == pytest.approx(family.score + WILSON_Z * se)


def test_a_family_of_one_gold_answer_is_left_out_as_uninformative() -> None:
    cases = [HeadlineCase(key=i, family="image_coverage", frame=i, gold="under 25 percent",
                          choices=("under 25 percent", "25 to 50 percent", "over 50 percent"),
                          predicted="under 25 percent") for i in range(40)]
    cases += [HeadlineCase(key=100 + i, family="presence", frame=i,
                           gold="yes" if i % 2 else "no", choices=YES_NO, predicted="yes")
              for i in range(40)]
    mean = headline(cases)
    assert mean is not None and [f.family for f in mean.families] == ["presence"]
    assert [f.family for f in mean.uninformative] == ["image_coverage"]
    assert mean.uninformative[0].raw == 1.0 and mean.mean == pytest.approx(0.5)
    # The same through family_mean of the records: a chance of 1 is left out there too.
    assert family_mean([FamilyScore(family="x", score=1.0, n=40, chance=1.0)]) is None


def test_a_planted_leak_is_not_hidden_by_the_headline() -> None:
    # The gold is always the first of names that vary per case: answering the first choice
    # needs no image, but it is a leak, not an answer prior; the headline shows it (the bias
    # audit flags it), while answering the family's most common name scores the chance.
    rng = random.Random(2)
    names = ["red ball", "blue box", "green cylinder", "yellow cone", "white cube"]
    cases = []
    for frame in range(FRAMES):
        shown = tuple(rng.sample(names, 3))
        cases.append(HeadlineCase(key=frame, family="closest_object", frame=frame,
                                  gold=shown[0], choices=shown))
    leak = headline(answered(cases, lambda c: c.choices[0]))
    assert leak is not None and leak.mean == pytest.approx(1.0)
    prior = headline(frequency_cases(cases))
    assert prior is not None and prior.caa == pytest.approx(0.0, abs=1e-12)
    rng = random.Random(5)
    guess = headline(answered(cases, lambda c: rng.choice(c.choices)))
    assert guess is not None and guess.caa is not None and abs(guess.caa) < 0.2


def test_the_difference_is_paired_on_shared_cases() -> None:
    cases = planted()
    rng = random.Random(11)
    model = answered(cases, lambda c: c.gold if rng.random() < 0.6 else rng.choice(c.choices),
                     lambda c: (c.target or 0) * 1.1)
    prior = frequency_cases(cases)
    gap = headline_difference(model, prior)
    a, b = headline(model), headline(prior)
    assert gap is not None and a is not None and b is not None
    assert gap.difference == pytest.approx(a.mean - b.mean)
    assert gap.ci_low is not None and gap.ci_high is not None
    assert 0 < gap.ci_low < gap.difference < gap.ci_high
    # Against itself: no difference, no width.
    same = headline_difference(model, model)
    assert same is not None and same.difference == 0.0 and same.ci_low == same.ci_high == 0.0
    # Only the shared cases count: half of the prior's cases dropped.
    half = headline_difference(model, prior[: len(prior) // 2])
    assert half is not None and 0 < half.n_cases <= len(cases) // 2
    # Two random guessers: the interval of their difference covers 0.
    r1, r2 = random.Random(1), random.Random(2)
    g1 = answered(cases, lambda c: r1.choice(c.choices))
    g2 = answered(cases, lambda c: r2.choice(c.choices))
    both = headline_difference(g1, g2)
    assert both is not None and both.ci_low is not None and both.ci_high is not None
    assert both.ci_low < 0 < both.ci_high


def test_a_prior_learned_per_recording_is_at_chance_on_a_pooled_board() -> None:
    # Two recordings with opposite answer mixes: "left" is 80 % of one, "right" of the other.
    # A guesser that knows each recording's majority (not the image) would be informative over
    # the pool; per recording it is a constant, so the headline scores it at chance exactly.
    cases = []
    for recording, common in (("a", "left"), ("b", "right")):
        other = "right" if common == "left" else "left"
        for frame in range(50):
            gold = common if frame % 5 else other
            cases.append(HeadlineCase(key=(recording, frame), family="horizontal_direction",
                                      frame=(recording, frame), gold=gold, choices=THIRDS,
                                      stratum=recording))
    majority = {"a": "left", "b": "right"}
    guessed = answered(cases, lambda c: majority[str(c.stratum)])
    mean = headline(guessed)
    assert mean is not None and mean.caa == pytest.approx(0.0, abs=1e-12)
    assert headline(frequency_cases(cases)) == mean  # the board's frequency row is the same
    # Pooled as one recording, the same guesser would read as informed.
    pooled = headline(HeadlineCase(**{**c.__dict__, "stratum": None}) for c in guessed)
    assert pooled is not None and pooled.caa is not None and pooled.caa > 0.3
