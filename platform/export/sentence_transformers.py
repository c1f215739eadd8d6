"""A skipview model as a sentence-transformers model: ``SentenceTransformer(OUT, trust_remote_code=True)``.

sentence-transformers builds a model from the modules its ``modules.json`` names, importing each by its dotted
path, so the exported folder holds one module, ``SkipviewEncoder``, around the model directory as skipview saved
it (``<OUT>/skipview_encoder``: ``SentenceEncoder.load`` reads it unchanged). It needs skipview installed and
fetches nothing. sentence-transformers 6 imports a module class from outside its own package only when the caller
passes ``trust_remote_code=True`` (its issue #3801), even one from an installed package: the import runs skipview's
code, which no folder of weights alone can express (the GRU views, skipview's tokeniser). The module tokenises with the model's own tokeniser and vocabulary (``preprocess``: a padded batch
of ids) and runs ``SentenceEncoder.represent``, so its vectors are ``SentenceEncoder.encode``'s for the view, mode
and post-processing chosen at export: every view skipview saves (f, g and their ensemble, uSIF-weighted g,
skip-thought with its expanded vocabulary) with the stored principal components removed, or none removed.
What cannot be exported is post-processing fitted on the sentences being encoded (``postprocessing="input"``):
sentence-transformers encodes batch by batch.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules.input_module import InputModule

from skipview.models.batching import Sentences
from skipview.models.encoder import CONFIG, SentenceEncoder
from skipview.models.views import MODES
from skipview.platform.export.model_card import model_card

ENCODER_FOLDER = "skipview_encoder"
POSTPROCESSINGS = ("stored", "none")


class SkipviewEncoder(InputModule):
    """sentence-transformers' input module around a ``SentenceEncoder``; ``view``, ``mode`` and ``postprocessing``
    are ``SentenceEncoder.encode``'s arguments, fixed at export (saved in ``skipview_sentence_transformers.json``)."""

    config_file_name = "skipview_sentence_transformers.json"
    config_keys = ["view", "mode", "postprocessing"]
    save_in_root = False

    def __init__(self, encoder: SentenceEncoder, view: str = "ensemble", mode: str = "unsupervised",
                 postprocessing: Literal["stored", "none"] = "stored"):
        super().__init__()
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if postprocessing not in POSTPROCESSINGS:
            raise ValueError(f"postprocessing must be one of {POSTPROCESSINGS}, got {postprocessing!r} (a component "
                             "fitted on the sentences encoded cannot be applied batch by batch)")
        encoder.select_views(view)               # an unknown view fails here, at export, in one line
        self.encoder, self.view, self.mode, self.postprocessing = encoder, view, mode, postprocessing

    def preprocess(self, inputs, prompt: str | None = None, **kwargs) -> dict[str, torch.Tensor]:
        """Token ids, padded (``ids``) with each sentence's length (``lengths``): ``Sentences``' batch."""
        texts = [prompt + text for text in inputs] if prompt else list(inputs)
        batch = Sentences.from_arrays(self.encoder.token_ids(texts))
        return {"ids": batch.ids, "lengths": batch.lengths}

    def forward(self, features: dict[str, torch.Tensor], **kwargs) -> dict[str, Any]:
        batch = Sentences(features["ids"], features["lengths"], features["lengths"].cpu())
        features["sentence_embedding"] = self.encoder.represent(batch, self.mode, self.view, self.postprocessing)
        return features

    def get_sentence_embedding_dimension(self) -> int:
        names = self.encoder.select_views(self.view)
        dims = [self.encoder.views[name].output_dim(self.mode) for name in names]
        return sum(dims) if self.mode == "supervised" else dims[0]

    def save(self, output_path: str, *args, safe_serialization: bool = True, **kwargs) -> None:
        self.encoder.save(output_path)
        self.save_config(output_path)

    @classmethod
    def load(cls, model_name_or_path: str, subfolder: str = "", token=None, cache_folder=None, revision=None,
             local_files_only: bool = False, **kwargs) -> "SkipviewEncoder":
        config = cls.load_config(model_name_or_path, subfolder=subfolder, token=token, cache_folder=cache_folder,
                                 revision=revision, local_files_only=local_files_only)
        directory = cls.load_dir_path(model_name_or_path, subfolder=subfolder, token=token,
                                      cache_folder=cache_folder, revision=revision, local_files_only=local_files_only)
        return cls(SentenceEncoder.load(directory), **config)


def export(model_dir: Path, out: Path, *, view: str = "ensemble", mode: str = "unsupervised",
           postprocessing: Literal["stored", "none"] = "stored", record: dict | None = None,
           scores: list[dict] = ()) -> Path:
    """Write ``model_dir`` (a skipview model directory) as the sentence-transformers model folder ``out``, with its
    model card (``README.md``) from ``record`` (``model_card.run_record``) and the evaluation records ``scores``
    (the model's first, then baselines'). ``out`` must not exist; it appears whole or not at all."""
    model_dir, out = Path(model_dir), Path(out)
    if not (model_dir / CONFIG).is_file():
        raise FileNotFoundError(f"{model_dir} is not a skipview model directory: {CONFIG} is missing")
    if out.exists():
        raise FileExistsError(f"{out} already exists: export writes a new folder, choose another path or remove it")
    encoder = SentenceEncoder.load(model_dir)
    module = SkipviewEncoder(encoder, view, mode, postprocessing)
    model = SentenceTransformer(modules=[module], similarity_fn_name="cosine")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        model.save(str(staging), create_model_card=False)
        _rename_module_folder(staging)
        dimension = module.get_sentence_embedding_dimension()
        (staging / "README.md").write_text(model_card(encoder, record, view=view, mode=mode,
                                                      postprocessing=postprocessing, dimension=dimension,
                                                      scores=list(scores)))
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out


def _rename_module_folder(folder: Path) -> None:
    """sentence-transformers names a module's folder after its index and class (``0_SkipviewEncoder``); the model
    directory inside gets a name that says what it is."""
    modules_file = folder / "modules.json"
    modules = json.loads(modules_file.read_text())
    (folder / modules[0]["path"]).rename(folder / ENCODER_FOLDER)
    modules[0]["path"] = ENCODER_FOLDER
    modules_file.write_text(json.dumps(modules, indent=2))


def check_round_trip(model_dir: Path, out: Path, sentences: list[str]) -> float:
    """The largest absolute difference between ``SentenceTransformer(out)`` and the skipview model's own vectors
    for ``sentences`` (the export's view, mode and post-processing)."""
    config = json.loads((out / ENCODER_FOLDER / SkipviewEncoder.config_file_name).read_text())
    ours = SentenceEncoder.load(model_dir).encode(sentences, **config)
    loaded = SentenceTransformer(str(out), device="cpu", trust_remote_code=True)
    theirs = loaded.encode(sentences, convert_to_numpy=True)
    return float(np.abs(np.asarray(theirs) - ours).max())
