"""Helpers shared by several test modules."""

import numpy as np

from coverage_core.stages import screening
from coverage_core.suggest.llm import ChatClient, LLMConfig


def chat_client(server, api_key: str, **overrides) -> ChatClient:
    """A ChatClient for the fake API ``server`` (tests/fake_api.py): model ``fake-chat``,
    no retries, a 5 s timeout; ``overrides`` replace any of these settings."""
    settings = dict(model="fake-chat", base_url=server.url + "/v1", api_key=api_key, max_retries=0, timeout=5)
    settings.update(overrides)
    return ChatClient(LLMConfig(**settings))


def plain_lexical_coverage(question_texts, chunk_texts):
    """The documented rule with sets and a dense chunk x word matrix: every
    chunk's stems, the misspelt words' edits looked up one by one."""
    chunk_stems = [{screening.normalise_word(w) for w in screening._words(t)} for t in chunk_texts]
    terms = [screening._question_terms(t) for t in question_texts]
    stems = list(dict.fromkeys(t for ts in terms for t in ts))
    df = {t: sum(t in c for c in chunk_stems) for t in stems}
    fixable = [t for t in stems if df[t] == 0 and len(t) >= screening.MIN_FIXABLE_LENGTH and t.isalpha()]
    fixes = {}
    for t in fixable[: screening.MAX_SPELLING_FIXES]:
        edits = {screening.normalise_word(e) for e in screening._one_edit(t)}
        counted = [(sum(e in c for c in chunk_stems), e) for e in edits if len(e) >= 3]
        counted = [c for c in counted if c[0]]
        if counted:
            fixes[t] = max(counted)[1]  # the most frequent; of equals, the greatest
    holds = {t: np.array([fixes.get(t, t) in c for c in chunk_stems], dtype=bool) for t in stems}
    n = len(chunk_texts)
    coverage, best, absent = [], [], []
    for ts in terms:
        if not ts:
            coverage.append(np.nan)
            best.append(-1)
            absent.append([])
            continue
        idf = np.array([np.log((1 + n) / (1 + holds[t].sum())) + 1 for t in ts])
        shares = np.stack([holds[t] for t in ts], axis=1).astype(float) @ (idf / idf.sum())
        top = int(np.argmax(shares)) if n else 0
        value = shares[top] if n else 0.0
        coverage.append(min(value, 1.0))
        best.append(top if value > 0 else -1)
        absent.append([t.decode() for t in ts if not holds[t].any()])
    return np.array(coverage, dtype=float), np.array(best), absent
