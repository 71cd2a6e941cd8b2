"""The prompts the measurements run: exact lengths cut from one English passage, and each user's own.

Repeated text costs the same as fresh text — every product and attention score depends on how many tokens
there are, not on which — so a timing at a length is that of any prompt of that length.
"""

from __future__ import annotations

import numpy as np

from .errors import PromptError
from .loader import LoadedModel

# A plain-English passage whose token ids are tiled to build prompts of any length.
PASSAGE = (
    "A language model answers in two phases. First it reads the whole prompt at once: every token "
    "passes through every layer together, and the keys and values of each token are kept in a cache. "
    "This is prefill, and it keeps the arithmetic units busy. Then it writes the answer one token at a "
    "time: each new token reads every weight and the whole cache to produce a single next token. This "
    "is decode, and it waits on memory. The time to the first token grows with the prompt; the time "
    "per token afterwards grows slowly with everything already in the cache. "
)
CHAPTER_PROMPT = "Explain quantum computing in three sentences."


def prompt_of_length(model: LoadedModel, n_tokens: int) -> np.ndarray:
    """Exactly `n_tokens` token ids: the passage's ids repeated and cut. Errors past the model's context."""
    if n_tokens < 1:
        raise PromptError(f"prompt length must be at least 1 token, got {n_tokens}")
    if n_tokens > model.config.max_context:
        raise PromptError(
            f"a {n_tokens}-token prompt exceeds {model.name}'s context of {model.config.max_context} tokens "
            f"— allowed: 1..{model.config.max_context}"
        )
    passage = np.asarray(model.tokenizer.encode(PASSAGE), dtype=np.int64)
    return np.tile(passage, -(-n_tokens // len(passage)))[:n_tokens]


def user_prompt(model: LoadedModel, user: int, n_tokens: int) -> np.ndarray:
    """User `user`'s prompt of exactly `n_tokens` tokens: the passage, starting `user` words in, so every
    user's prompt differs while all have the same length."""
    words = PASSAGE.split()
    text = " ".join(words[user % len(words):] + words[: user % len(words)])
    ids = np.asarray(model.tokenizer.encode(text), dtype=np.int64)
    return np.tile(ids, -(-n_tokens // len(ids)))[:n_tokens]
