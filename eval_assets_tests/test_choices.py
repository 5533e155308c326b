"""Reading lettered replies ("B) no", "The answer is B) no.") as choices, and refusing the ones
that contradict themselves; choice-text prompts are read exactly as before."""

from __future__ import annotations

import pytest

from eval_assets.choices import ChoiceMatch, match_choice
from eval_assets.schemas.vqa_prompt import lettered_text, parse_lettered

YES_NO = ["yes", "no"]
DISTANCES = ["under 1 meter", "1 to under 2 meters", "2 to under 4 meters", "4 meters or more"]
NESTED = ["1", "1 to under 2 meters", "2"]

LETTERED_CASES: list[tuple[str, list[str], str | None]] = [
    # A letter alone, in every mark the format template's readers write.
    ("B", YES_NO, "no"),
    ("B)", YES_NO, "no"),
    ("(B)", YES_NO, "no"),
    ("B.", YES_NO, "no"),
    ("Answer: B", YES_NO, "no"),
    ("The answer is B", YES_NO, "no"),
    ("The correct answer is (B).", YES_NO, "no"),
    # The letter with its own option text: the form SmolLM2 answers in.
    ("B) no", YES_NO, "no"),
    ("B) No.", YES_NO, "no"),
    ("(B) no", YES_NO, "no"),
    ("B. no", YES_NO, "no"),
    ("B: no", YES_NO, "no"),
    ("B)no", YES_NO, "no"),
    ("**B) no**", YES_NO, "no"),
    ("**B)** no", YES_NO, "no"),
    ("Answer: B) no", YES_NO, "no"),
    ("The answer is B) no.", YES_NO, "no"),
    ("A) yes", YES_NO, "yes"),
    ("B) No, the chair is not in view.", YES_NO, "no"),
    ("B) no\n\nThe table hides it.", YES_NO, "no"),
    ("C) 2 to under 4 meters", DISTANCES, "2 to under 4 meters"),
    ("B) 1 to under 2 meters away", DISTANCES, "1 to under 2 meters"),
    ("B) 1 to under 2 meters", NESTED, "1 to under 2 meters"),
    # Letter and text disagree: unparseable, whichever one might be meant.
    ("B) yes", YES_NO, None),
    ("(A) no", YES_NO, None),
    ("The answer is A) no.", YES_NO, None),
    ("A) 1 to under 2 meters", NESTED, None),  # "1" is A's text, but the reply names B's
    ("A) 4 meters or more", DISTANCES, None),
    # A letter followed by prose that names no option is not read as the letter.
    ("B) because it is hidden", YES_NO, None),
    # Two letters named as answers.
    ("A or B", YES_NO, None),
    ("The answer is A or B", YES_NO, None),
    ("A) yes B) no", YES_NO, None),
    ("(A) or (B)", YES_NO, None),
    ("B) no, or maybe A) yes", YES_NO, None),
    ("B) no or A", YES_NO, None),
    ("A/B", YES_NO, None),
    # A letter past the options, or a word that only starts with a letter.
    ("C) no", YES_NO, None),
    ("C", YES_NO, None),
    ("A chair is there", YES_NO, None),
    ("Bno", YES_NO, None),
    ("Answerb", YES_NO, None),
    ("Option B", YES_NO, "no"),
    # Choices that are letters themselves: only a reading both ways agree on.
    ("The answer is a", ["b", "a"], None),
    ("(B) b", ["a", "b"], "b"),
    # Option text alone still reads as before on a lettered prompt.
    ("no", YES_NO, "no"),
    ("No, there is a table in the way", YES_NO, "no"),
    ("B) no, there is a chair", YES_NO, "no"),  # the article "a" is no second letter
]


# The rows above read by choice text, not by letter.
TEXT_TIERS = {"no": "exact", "No, there is a table in the way": "leading"}


@pytest.mark.parametrize(("reply", "choices", "expected"), LETTERED_CASES)
def test_lettered_replies(reply: str, choices: list[str], expected: str | None) -> None:
    tier = None if expected is None else TEXT_TIERS.get(reply, "letter")
    assert match_choice(reply, choices, lettered=True) == ChoiceMatch(choice=expected, tier=tier)


@pytest.mark.parametrize(
    "reply",
    ["B) no", "(B) no", "The answer is B) no.", "B", "(B)", "B)", "B) yes", "A or B"],
)
def test_letters_are_not_read_on_choice_text_prompts(reply: str) -> None:
    """The template of record (choice text, not letters) keeps reading these as nothing."""
    assert match_choice(reply, YES_NO) == ChoiceMatch()


@pytest.mark.parametrize(
    ("reply", "expected"),
    [("yes", ChoiceMatch(choice="yes", tier="exact")),
     ("Yes, there is no doubt.", ChoiceMatch(choice="yes", tier="leading")),
     ("1 to under 2 meters away.", ChoiceMatch(choice="1 to under 2 meters", tier="leading")),
     ("Answer: no", ChoiceMatch(choice="no", tier="exact"))],
)
def test_choice_text_replies_read_the_same_lettered_or_not(
        reply: str, expected: ChoiceMatch) -> None:
    choices = YES_NO if expected.choice in YES_NO else DISTANCES
    assert match_choice(reply, choices) == expected
    assert match_choice(reply, choices, lettered=True) == expected


def test_every_option_line_of_the_format_template_reads_back_as_its_choice() -> None:
    """A reply echoing one option line of the prompt the format template sends names that
    option."""
    pairs = parse_lettered(lettered_text("How far away is the chair?", DISTANCES))
    assert pairs is not None and [c for _, c in pairs] == DISTANCES
    for letter, choice in pairs:
        for reply in (f"{letter}) {choice}", f"({letter}) {choice}", letter,
                      f"The answer is {letter}) {choice}."):
            assert match_choice(reply, DISTANCES, lettered=True) == ChoiceMatch(
                choice=choice, tier="letter"), reply
