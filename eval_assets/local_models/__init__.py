"""Local models served behind the OpenAI-compatible API: the offline baselines and judge.

``random`` (a seeded chooser: chance level) and ``blind-smollm2`` (SmolLM2-135M from the text
alone: the language prior) answer the same prompts a real VLM gets, through the same HTTP API.
Both honour a flat ``json_schema`` response format, which lets SmolLM2 serve as the offline judge.

Modules: ``base`` (the :class:`LocalModel` protocol), ``response_format`` (the structured-output
subset), ``random_choice``, ``smollm2`` and ``kv_prefix`` (its KV-cache engine), ``registry``
(models by name) and ``server`` (``eval-assets serve``, and a server in a thread). Both the models
under test (:mod:`eval_assets.model_runs`) and the judge (:mod:`eval_assets.metrics.judge`) reach
them through :func:`eval_assets.openai_chat.open_endpoint`. Nothing heavy is imported here.
"""
