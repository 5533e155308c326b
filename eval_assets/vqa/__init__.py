"""VQA generation: question authors, the seven families' evidence rules and the dataset writer.

Answers come from sensors and geometry only; an author (offline vocabulary or a VLM) merely
proposes which objects and families to ask about.
"""

from eval_assets.vqa.authors import (
    AUTHORS,
    AuthorConfig,
    AuthorConfigError,
    QuestionAuthor,
    VLMAuthor,
    VocabularyAuthor,
    build_author,
)
from eval_assets.vqa.dataset import (
    DatasetExistsError,
    DatasetSummary,
    FrameInputs,
    NothingAnswerableError,
    answer_frame,
    publish_dataset,
)
from eval_assets.vqa.families import FAMILIES, FrameEvidence, decide

__all__ = [
    "AUTHORS",
    "FAMILIES",
    "AuthorConfig",
    "AuthorConfigError",
    "DatasetExistsError",
    "DatasetSummary",
    "FrameEvidence",
    "FrameInputs",
    "NothingAnswerableError",
    "QuestionAuthor",
    "VLMAuthor",
    "VocabularyAuthor",
    "answer_frame",
    "build_author",
    "decide",
    "publish_dataset",
]
