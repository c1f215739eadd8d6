"""Image-sentence ranking (skip-thought paper section 3.4): linear embeddings ``U x`` (image) and ``V y``
(sentence vector) trained with the pairwise contrastive ranking loss

    sum_x sum_k max(0, alpha - s(Ux, Vy) + s(Ux, Vy_k)) + sum_y sum_k max(0, alpha - s(Vy, Ux) + s(Vy, Ux_k)),

s = cosine, margin alpha = 0.2, k contrastive terms = the other pairs of a minibatch of k + 1 (paper: k = 50,
1000-d embedding). The model is kept at its best dev score (sum of the six recalls); the test split reports
R@1/5/10 and median rank for image annotation (image -> its captions) and image search (caption -> image).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F


@dataclass
class RankingSplit:
    """Image features (n_images, d_img), caption vectors (n_captions, d_sent) and each caption's image row."""

    images: np.ndarray
    captions: np.ndarray
    image_of_caption: np.ndarray

    def __post_init__(self):
        if len(self.captions) != len(self.image_of_caption):
            raise ValueError(f"{len(self.captions)} caption vectors but {len(self.image_of_caption)} image indices")
        if len(self.image_of_caption) and (self.image_of_caption.min() < 0
                                           or self.image_of_caption.max() >= len(self.images)):
            raise ValueError(f"caption image indices must lie in [0, {len(self.images)})")


def ranking_metrics(image_emb: torch.Tensor, caption_emb: torch.Tensor, image_of_caption: np.ndarray
                    ) -> dict[str, float]:
    """R@1/5/10 (%) and median rank (1 = best) both ways, by cosine. Annotation ranks all captions for an image
    and counts its best-ranked true caption; search ranks all images for a caption."""
    sims = (F.normalize(image_emb, dim=1) @ F.normalize(caption_emb, dim=1).T).cpu().numpy()  # (images, captions)
    owner = np.asarray(image_of_caption)
    # rank of a candidate = number of candidates scored strictly higher (+1)
    true_caption_scores = np.where(owner[None, :] == np.arange(len(sims))[:, None], sims, -np.inf)
    best_true = true_caption_scores.max(axis=1)
    annotation = (sims > best_true[:, None]).sum(axis=1) + 1
    true_image_scores = sims[owner, np.arange(len(owner))]
    search = (sims > true_image_scores[None, :]).sum(axis=0) + 1
    metrics = {}
    for name, ranks in (("annotation", annotation), ("search", search)):
        for k in (1, 5, 10):
            metrics[f"{name}.r@{k}"] = 100.0 * float((ranks <= k).mean())
        metrics[f"{name}.median_rank"] = float(np.median(ranks))
    return metrics


def contrastive_loss(img: torch.Tensor, sen: torch.Tensor, margin: float) -> torch.Tensor:
    """Summed hinge terms over the other pairs of the batch, both directions, averaged per pair."""
    scores = F.normalize(img, dim=1) @ F.normalize(sen, dim=1).T      # (b, b), diagonal = true pairs
    positive = scores.diag()
    off_diagonal = ~torch.eye(len(scores), dtype=torch.bool, device=scores.device)
    annotation = (margin - positive[:, None] + scores).clamp(min=0)  # image i vs caption j
    search = (margin - positive[None, :] + scores).clamp(min=0)      # caption j vs image i
    return ((annotation + search) * off_diagonal).sum() / len(scores)


def train_ranking(train: RankingSplit, dev: RankingSplit, test: RankingSplit, dim: int = 1000,
                  margin: float = 0.2, contrastive: int = 50, epochs: int = 15, lr: float = 2e-4,
                  seed: int = 0, device: str = "cpu") -> dict[str, float]:
    """Fit U, V on train; keep the epoch with the best dev recall sum; return test metrics (prefixed ``test.``)
    and the chosen epoch's dev metrics (``dev.``)."""
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    to = lambda a: torch.as_tensor(np.asarray(a, dtype=np.float32), device=device)  # noqa: E731
    img_proj = torch.nn.Linear(train.images.shape[1], dim, bias=False).to(device)
    sen_proj = torch.nn.Linear(train.captions.shape[1], dim, bias=False).to(device)
    optimiser = torch.optim.Adam([*img_proj.parameters(), *sen_proj.parameters()], lr=lr)
    images, captions = to(train.images), to(train.captions)
    owner = torch.as_tensor(train.image_of_caption, device=device)

    def evaluate(split: RankingSplit) -> dict[str, float]:
        with torch.no_grad():
            return ranking_metrics(img_proj(to(split.images)), sen_proj(to(split.captions)), split.image_of_caption)

    best, best_state, best_dev = -1.0, None, {}
    for _ in range(epochs):
        for batch in torch.randperm(len(captions), generator=generator).split(contrastive + 1):
            if len(batch) < 2:
                continue
            # one caption per image in a batch, so no "contrastive" term is in fact a true pair
            _, first = np.unique(owner[batch].cpu().numpy(), return_index=True)
            batch = batch[torch.as_tensor(first)]
            optimiser.zero_grad()
            loss = contrastive_loss(img_proj(images[owner[batch]]), sen_proj(captions[batch]), margin)
            loss.backward()
            optimiser.step()
        dev_metrics = evaluate(dev)
        score = sum(v for k, v in dev_metrics.items() if "r@" in k)
        if score > best:
            best, best_dev = score, dev_metrics
            best_state = ({k: v.clone() for k, v in img_proj.state_dict().items()},
                          {k: v.clone() for k, v in sen_proj.state_dict().items()})
    img_proj.load_state_dict(best_state[0])
    sen_proj.load_state_dict(best_state[1])
    return {**{f"test.{k}": v for k, v in evaluate(test).items()}, **{f"dev.{k}": v for k, v in best_dev.items()}}


def read_captions(path: str) -> tuple[list[str], np.ndarray]:
    """A caption file: lines ``image_row<TAB>caption`` (image_row indexes the rows of the matching .npy)."""
    texts, owners = [], []
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            row, sep, caption = line.rstrip("\n").partition("\t")
            if not sep or not row.strip().isdigit():
                raise ValueError(f"{path}:{line_no}: expected 'image_row<TAB>caption', got {line.rstrip()!r}")
            owners.append(int(row))
            texts.append(caption)
    return texts, np.asarray(owners, dtype=np.int64)
