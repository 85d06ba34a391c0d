"""The deterministic ``rules`` extractor: no LLM, English and Chinese.

Pipeline per readable turn: split into clauses (``clauses``), keep first-person
statements with content as facts (``filters``, ``content``), resolve relative dates
against the day the turn was said (``dates_en``, ``dates_zh``), rewrite "I"/"you" into
the speakers (``speakers``, ``rewrite``). A turn that carries content but gives no such
fact is kept whole as one EPISODIC memory (``episode``): in the no-LLM mode nothing said
is lost, while greetings, questions and pure reactions still leave nothing.
``extract`` ties them together.
"""
