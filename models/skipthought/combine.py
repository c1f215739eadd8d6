"""Combine-skip (Kiros et al. 2015, section 3.1): the concatenation of a uni-skip and a bi-skip vector, as a
``SentenceEncoder`` with both as views; its supervised "ensemble" is that concatenation (after the per-view L2
normalisation, as the authors' encoder normalises each model's vectors before concatenating them).
"""

from __future__ import annotations

from skipview.models.encoder import PostProcessing, SentenceEncoder
from skipview.models.skipthought.view import SkipThoughtView


def combine_skip(uni_skip: SentenceEncoder, bi_skip: SentenceEncoder) -> SentenceEncoder:
    """One encoder with the views "uni" and "bi" of a trained uni-skip and bi-skip model (same vocabulary and
    tokeniser); their fitted post-processing components come along."""
    views, components = {}, {}
    for name, model in (("uni", uni_skip), ("bi", bi_skip)):
        view = model.views[name] if name in model.views else None
        if not isinstance(view, SkipThoughtView) or view.encoder_kind != name:
            raise ValueError(f"combine-skip needs a {name}-skip model (a skip-thought view named {name!r}), "
                             f"got views {model.view_names}")
        views[name] = view
        components.update({key: u for key, u in model.postprocessing.components.items() if key[0] == name})
    if uni_skip.vocab.words != bi_skip.vocab.words or uni_skip.tokenizer != bi_skip.tokenizer:
        raise ValueError("combine-skip needs two models trained on the same vocabulary and tokeniser")
    return SentenceEncoder(views, uni_skip.vocab, uni_skip.tokenizer, max_len=uni_skip.max_len,
                           postprocessing=PostProcessing(components),
                           metadata={"objective": "skipthought", "combine_skip": True})
