"""``SentenceEncoder``: the inference-side model (the contract between training, evaluation and serving).

It holds named views (f and g for the multi-view models; f1/f2, g1/g2 or one view for the ablations; whatever a
skip-thought model registers), the fixed word-vector matrix they read, the vocabulary and tokeniser of the corpus
it was trained on, and the post-processing components. ``encode`` tokenises exactly as corpus preparation did.

Post-processing (multi-view paper section 2.4, Arora et al. 2017): per view and pooling mode, remove the
projection on the top principal component, then L2-normalise. Ensemble: unsupervised = average of the
post-processed views (paper 3.1: z = (z_f + z_g) / 2, not re-normalised), supervised = concatenation.

Model directory: ``config.json``, ``model.safetensors`` (views), ``vocab.tsv``, ``word_vectors.npy`` (when the
model reads fixed word vectors), ``postprocessing.safetensors`` (components, keyed ``view/mode``).
"""

from __future__ import annotations

import importlib
import json
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import nn
from tqdm.auto import tqdm

from skipview.models.arrays import load_npy
from skipview.models.batching import Sentences
from skipview.models.directories import swap_in
from skipview.models.pca import SecondMoment, remove_component, remove_components, shared_components
from skipview.models.text import Tokenizer
from skipview.models.views import MODES, Mode, View, build_view
from skipview.models.vocab import Vocab

FORMAT = "skipview-sentence-encoder-v1"
CONFIG, WEIGHTS, VOCAB, WORD_VECTORS, POSTPROCESSING = (
    "config.json", "model.safetensors", "vocab.tsv", "word_vectors.npy", "postprocessing.safetensors")
# The module that defines each view kind outside ``views.py``: loading a model imports the ones its views need and
# nothing else (no training objective). A view kind of one's own is registered by importing its module first.
VIEW_MODULES = {"skipthought": "skipview.models.skipthought.view"}


def top_component(z: torch.Tensor) -> torch.Tensor:
    """The exact top principal component (uncentred) of the rows of z."""
    moment = SecondMoment()
    moment.add(z)
    return moment.top_component()


def combine(processed: Sequence[torch.Tensor], mode: Mode) -> torch.Tensor:
    """The views' post-processed vectors as one: averaged in unsupervised mode (paper 3.1, not re-normalised),
    concatenated in supervised mode; a single view as it is."""
    if len(processed) == 1:
        return processed[0]
    return torch.stack(list(processed)).mean(0) if mode == "unsupervised" else torch.cat(list(processed), dim=-1)


class PostProcessing:
    """Top principal components per (view, mode); a missing entry means that combination was not fitted."""

    def __init__(self, components: Mapping[tuple[str, str], torch.Tensor] | None = None):
        self.components = dict(components or {})

    def apply(self, view: str, mode: str, z: torch.Tensor, *, remove_pc: bool = True) -> torch.Tensor:
        if remove_pc:
            if (view, mode) not in self.components:
                raise KeyError(f"no post-processing component for view {view!r} in {mode} mode: call "
                               "SentenceEncoder.fit_postprocessing(...) first (or pass postprocessing='none')")
            z = remove_component(z, self.components[(view, mode)].to(z.device, z.dtype))
        return nn.functional.normalize(z, dim=-1)

    def state(self) -> dict[str, torch.Tensor]:
        return {f"{view}/{mode}": u.contiguous() for (view, mode), u in self.components.items()}

    @classmethod
    def from_state(cls, state: Mapping[str, torch.Tensor]) -> "PostProcessing":
        return cls({tuple(key.split("/", 1)): value for key, value in state.items()})


class SentenceEncoder(nn.Module):
    def __init__(self, views: Mapping[str, View], vocab: Vocab, tokenizer: Tokenizer,
                 word_vectors: np.ndarray | torch.Tensor | None = None, *, max_len: int | None = None,
                 postprocessing: PostProcessing | None = None, metadata: dict | None = None):
        super().__init__()
        if not views:
            raise ValueError("a SentenceEncoder needs at least one view")
        if "ensemble" in views or any("/" in name for name in views):
            raise ValueError(f"view names may not be 'ensemble' or contain '/': {list(views)}")
        self.views = nn.ModuleDict(dict(views))
        self.vocab, self.tokenizer, self.max_len = vocab, tokenizer, max_len
        self.postprocessing = postprocessing or PostProcessing()
        self.metadata = dict(metadata or {})
        vectors = None if word_vectors is None else torch.as_tensor(word_vectors, dtype=torch.float32)
        # a buffer, not a parameter: the word vectors are fixed; stored in its own file, not in the weights
        self.register_buffer("word_vectors", vectors, persistent=False)
        self.eval()

    @property
    def view_names(self) -> list[str]:
        return list(self.views)

    @property
    def device(self) -> torch.device:
        for tensor in self.parameters():
            return tensor.device
        return self.word_vectors.device if self.word_vectors is not None else torch.device("cpu")

    # ---------------------------------------------------------------------------------------- encoding

    def token_ids(self, sentences: Iterable[str]) -> list[np.ndarray]:
        """Tokenise with the corpus tokeniser, map to ids (unknown words -> <unk>), cap at ``max_len``."""
        cap = self.max_len or None
        return [np.asarray(self.vocab.encode(self.tokenizer(s))[:cap], dtype=np.int64) for s in sentences]

    @torch.no_grad()
    def raw_representations(self, token_ids: Sequence[np.ndarray], mode: Mode, views: Sequence[str],
                            batch_size: int = 128, progress: bool = False) -> dict[str, torch.Tensor]:
        """Pooled representations before post-processing, (n, D) per view, in input order.

        Sentences are processed in order of length so a batch holds near-equal lengths; padding never enters
        a pooled value, so a sentence's vector does not depend on which batch it lands in."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        order = np.argsort([len(t) for t in token_ids], kind="stable")
        outputs = {name: [] for name in views}
        device = self.device
        chunks = range(0, len(order), batch_size)
        for start in tqdm(chunks, desc=f"encode ({mode})", disable=not progress, leave=False):
            batch = Sentences.from_arrays([token_ids[i] for i in order[start:start + batch_size]]).to(device)
            for name in views:
                outputs[name].append(self.views[name].encode(batch, mode, self.word_vectors).float().cpu())
        inverse = torch.from_numpy(np.argsort(order))
        return {name: (torch.cat(parts)[inverse] if parts else
                       torch.empty(0, self.views[name].output_dim(mode)))
                for name, parts in outputs.items()}

    def encode(self, sentences: Sequence[str], mode: Mode = "unsupervised", view: str = "ensemble",
               batch_size: int = 128, postprocessing: PostProcessing | Literal["stored", "input", "none"] = "stored",
               progress: bool = False, components: int = 1) -> np.ndarray:
        """Sentence vectors (n, D) float32.

        ``view``: "ensemble" (all views: averaged in unsupervised mode, concatenated in supervised mode) or one
        view name (``view_names``). ``postprocessing``: "stored" uses the components saved with the model;
        "input" fits each view's component on these sentences (Arora et al.'s evaluation: per task or per STS
        subset, as the caller groups them); a ``PostProcessing`` uses those components; "none" skips the
        component removal (L2 normalisation stays). ``components`` > 1 with "input": Ethayarajh (2018)'s
        piecewise removal of that many components, each scaled by its share of the squared singular values
        (not the multi-view paper's post-processing, which removes the top one whole)."""
        names = self.select_views(view)
        token_ids = self.token_ids(sentences)
        raw = self.raw_representations(token_ids, mode, names, batch_size, progress)
        if components != 1 and postprocessing != "input":
            raise ValueError(f"components={components}: several components are fitted on the input only "
                             "(postprocessing='input')")
        if postprocessing == "input" and components > 1:
            processed = [nn.functional.normalize(
                remove_components(raw[name], *shared_components(raw[name], components)), dim=-1) for name in names]
        else:
            if postprocessing == "input":
                processor = PostProcessing({(name, mode): top_component(raw[name]) for name in names})
            else:
                processor = self.postprocessing if postprocessing in ("stored", "none") else postprocessing
            processed = [processor.apply(name, mode, raw[name], remove_pc=postprocessing != "none") for name in names]
        return combine(processed, mode).numpy().astype(np.float32, copy=False)

    @torch.no_grad()
    def represent(self, batch: Sentences, mode: Mode = "unsupervised", view: str = "ensemble",
                  postprocessing: Literal["stored", "none"] = "stored") -> torch.Tensor:
        """``encode``'s vectors for one padded batch of token ids (``token_ids``), on the model's device: what a
        caller that batches for itself (sentence-transformers) runs per batch. Only the post-processing that does
        not depend on the other sentences encoded with it ("stored", "none") can be applied batch by batch, and
        padding never enters a pooled value, so the vectors equal ``encode``'s in any batching."""
        names = self.select_views(view)
        processed = [self.postprocessing.apply(name, mode, self.views[name].encode(batch, mode, self.word_vectors)
                                               .float(), remove_pc=postprocessing != "none") for name in names]
        return combine(processed, mode)

    def fit_postprocessing(self, sentences: Sequence[str] | Sequence[np.ndarray], *, batch_size: int = 256,
                           modes: Sequence[Mode] = MODES, store: bool = True,
                           progress: bool = False) -> PostProcessing:
        """Fit each view's top principal component, per mode, on ``sentences`` (raw strings, or token-id arrays
        in this model's vocabulary, e.g. ``batching.sample_sentence_ids(corpus, n)``). ``store=True`` makes them
        the model's stored components (saved with it); ``store=False`` only returns them (``pc_source: task``)."""
        if len(sentences) == 0:
            raise ValueError("fit_postprocessing needs at least one sentence")
        token_ids = (self.token_ids(sentences) if isinstance(sentences[0], str)
                     else [np.asarray(s, dtype=np.int64)[: self.max_len or None] for s in sentences])
        components = {}
        for mode in modes:
            raw = self.raw_representations(token_ids, mode, self.view_names, batch_size, progress)
            components.update({(name, mode): top_component(z) for name, z in raw.items()})
        fitted = PostProcessing(components)
        if store:
            self.postprocessing = fitted
        return fitted

    def select_views(self, view: str) -> list[str]:
        """The view names ``view`` stands for: all of them for "ensemble", else that one (an unknown name fails)."""
        if view == "ensemble":
            return self.view_names
        if view not in self.views:
            raise ValueError(f"unknown view {view!r}: this model has {self.view_names} (or 'ensemble')")
        return [view]

    # --------------------------------------------------------------------------------------- save / load

    def config(self) -> dict:
        return {"format": FORMAT, "tokenizer": self.tokenizer.to_dict(), "max_len": self.max_len,
                "views": {name: {"kind": v.kind, "config": v.config()} for name, v in self.views.items()},
                "word_vectors": self.word_vectors is not None, "metadata": self.metadata}

    def save(self, directory: str | Path) -> Path:
        """Write the model directory atomically: everything goes to a sibling temporary folder first."""
        directory = Path(directory)
        if directory.exists() and any(directory.iterdir()) and not (directory / CONFIG).is_file():
            raise FileExistsError(f"{directory} exists and is not a model directory; refusing to overwrite it")
        directory.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=directory.parent))
        try:
            (staging / CONFIG).write_text(json.dumps(self.config(), indent=2))
            state = {k: v.detach().cpu().contiguous() for k, v in self.views.state_dict().items()}
            save_file(state, staging / WEIGHTS)
            self.vocab.save(staging / VOCAB)
            if self.word_vectors is not None:
                np.save(staging / WORD_VECTORS, self.word_vectors.cpu().numpy())
            save_file({k: v.cpu() for k, v in self.postprocessing.state().items()} or {}, staging / POSTPROCESSING)
            swap_in(staging, directory)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return directory

    @classmethod
    def load(cls, directory: str | Path, device: str | torch.device = "cpu") -> "SentenceEncoder":
        directory = Path(directory)
        config_path = directory / CONFIG
        if not config_path.is_file():
            raise FileNotFoundError(f"{directory} is not a model directory: {CONFIG} is missing")
        config = json.loads(config_path.read_text())
        if config.get("format") != FORMAT:
            raise ValueError(f"{config_path}: format {config.get('format')!r}, expected {FORMAT!r}")
        for kind in {spec["kind"] for spec in config["views"].values()} & set(VIEW_MODULES):
            importlib.import_module(VIEW_MODULES[kind])
        views = {name: build_view(spec["kind"], spec["config"]) for name, spec in config["views"].items()}
        container = nn.ModuleDict(views)
        container.load_state_dict(load_file(directory / WEIGHTS), strict=True)
        # copy-on-write map: the table (1.2 GB at a million words) is read from the page cache and shared by every
        # process that loads the model, instead of a private copy each (MLflow's log_model loads it on the training
        # worker that already holds the table); a write, which nothing does, would stay private to this process
        word_vectors = load_npy(directory / WORD_VECTORS, mmap="c") if config["word_vectors"] else None
        post = PostProcessing.from_state(load_file(directory / POSTPROCESSING))
        model = cls(views, Vocab.load(directory / VOCAB), Tokenizer.from_dict(config["tokenizer"]), word_vectors,
                    max_len=config["max_len"], postprocessing=post, metadata=config.get("metadata"))
        return model.to(device)
