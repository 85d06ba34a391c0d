"""The deterministic ``rules`` extractor: no LLM, English and Chinese.

Pipeline per readable turn: split into clauses (``clauses``), drop what is not a fact
about the speaker (``filters``), resolve relative dates against today (``dates_en``,
``dates_zh``), rewrite first person into a self-contained subject (``rewrite``).
``extract`` ties them together. Recall over precision is NOT the goal: the rules keep
only first-person statements with content, because a wrong memory costs more than a
missed one.
"""
