"""SentEval's supervised protocols on fixed features: nested CV, k-fold then refit, dev selection, and the
Tai et al. soft-label relatedness regression.

Fold splits are scikit-learn's ``StratifiedKFold(shuffle=True, random_state=1111)`` as in SentEval; the L2
strength is chosen from ``C_GRID`` by the mean accuracy over validation folds that never contain the rows
the chosen model is scored on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from scipy.stats import pearsonr, spearmanr
from sklearn.model_selection import StratifiedKFold

from skipview.platform.evaluation.classifier import C_GRID, LogisticModels, Preconditioner, accuracy, fit_logistic


@dataclass
class Features:
    """A feature matrix on the compute device, with labels and the fitted preconditioner shared by every fit."""

    x: torch.Tensor
    y: torch.Tensor
    n_classes: int

    @classmethod
    def of(cls, x: np.ndarray, y: np.ndarray, n_classes: int, device: str) -> "Features":
        return cls(torch.as_tensor(np.asarray(x, dtype=np.float32), device=device),
                   torch.as_tensor(np.asarray(y, dtype=np.int64), device=device), n_classes)


def _masks(n: int, index_sets: list[np.ndarray], device) -> torch.Tensor:
    masks = torch.zeros(len(index_sets), n, dtype=torch.bool, device=device)
    for row, idx in enumerate(index_sets):
        masks[row, torch.as_tensor(idx, device=device)] = True
    return masks


def _folds(y: np.ndarray, k: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    return list(StratifiedKFold(n_splits=k, shuffle=True, random_state=seed).split(np.zeros(len(y)), y))


def _grid_fit(data: Features, train_sets: list[np.ndarray], pre: Preconditioner,
              init: LogisticModels | None = None) -> LogisticModels:
    """One model per (train set, C) pair, ordered train set-major: model ``t * len(C_GRID) + c``."""
    sets = [idx for idx in train_sets for _ in C_GRID]
    cs = torch.tensor(C_GRID * len(train_sets), dtype=data.x.dtype, device=data.x.device)
    return fit_logistic(data.x, data.y, _masks(len(data.y), sets, data.x.device), cs, data.n_classes,
                        preconditioner=pre, init=init)


def _grid_accuracy(data: Features, models: LogisticModels, eval_sets: list[np.ndarray]) -> np.ndarray:
    """(len(eval_sets), len(C_GRID)) accuracies of ``_grid_fit`` models on the matching evaluation sets."""
    sets = [idx for idx in eval_sets for _ in C_GRID]
    acc = accuracy(models, data.x, data.y, _masks(len(data.y), sets, data.x.device))
    return acc.reshape(len(eval_sets), len(C_GRID))


def _model_accuracy(data: Features, models: LogisticModels, index: int, eval_set: np.ndarray) -> float:
    one = LogisticModels(models.weight[index:index + 1], models.bias[index:index + 1])
    return float(accuracy(one, data.x, data.y, _masks(len(data.y), [eval_set], data.x.device))[0])


def _repeat_grid(models: LogisticModels, block: int, times: int) -> LogisticModels:
    """The ``len(C_GRID)`` models of block ``block``, repeated ``times`` times (warm starts for inner folds)."""
    rows = slice(block * len(C_GRID), (block + 1) * len(C_GRID))
    return LogisticModels(models.weight[rows].repeat(times, 1, 1), models.bias[rows].repeat(times, 1))


def nested_cv(data: Features, kfold: int, seed: int) -> dict[str, float]:
    """MR/CR/SUBJ/MPQA: outer k folds give the test accuracy; inside each outer training part an inner k-fold
    CV picks C using the training part only. ``acc`` is the mean outer test accuracy, ``dev_acc`` the mean
    inner-CV accuracy of the chosen C.

    The outer-train models for every C are fitted first; they are the final models for the chosen C and the
    warm start of their inner folds (which share (k-1)/k of the rows), which cuts the L-BFGS iterations.
    """
    y = data.y.cpu().numpy()
    pre = Preconditioner.fit(data.x)
    outer = _folds(y, kfold, seed)
    outer_models = _grid_fit(data, [train for train, _ in outer], pre)
    test_acc, dev_acc = [], []
    for o, (train, test) in enumerate(outer):
        inner = [(train[a], train[b]) for a, b in _folds(y[train], kfold, seed)]
        inner_models = _grid_fit(data, [a for a, _ in inner], pre, init=_repeat_grid(outer_models, o, kfold))
        validation = _grid_accuracy(data, inner_models, [b for _, b in inner]).mean(axis=0)  # (C,)
        best = int(np.argmax(validation))
        dev_acc.append(validation[best])
        test_acc.append(_model_accuracy(data, outer_models, o * len(C_GRID) + best, test))
    return {"acc": 100 * float(np.mean(test_acc)), "dev_acc": 100 * float(np.mean(dev_acc))}


def kfold_then_refit(train: Features, test: Features, kfold: int, seed: int) -> tuple[dict[str, float], np.ndarray]:
    """TREC/MRPC: k-fold CV on the training set picks C; refit on all of it; score the test set.
    Returns the metrics and the test predictions (MRPC needs them for F1)."""
    y = train.y.cpu().numpy()
    pre = Preconditioner.fit(train.x)
    folds = _folds(y, kfold, seed)
    full = _grid_fit(train, [np.arange(len(y))], pre)
    fold_models = _grid_fit(train, [a for a, _ in folds], pre, init=_repeat_grid(full, 0, kfold))
    validation = _grid_accuracy(train, fold_models, [b for _, b in folds]).mean(axis=0)
    best = int(np.argmax(validation))
    predictions = LogisticModels(full.weight[best:best + 1], full.bias[best:best + 1]).predict(test.x)[0]
    acc = float((predictions == test.y).double().mean())
    return ({"acc": 100 * acc, "dev_acc": 100 * float(validation[best]), "C": C_GRID[best]},
            predictions.cpu().numpy())


def dev_selection(train: Features, dev: Features, test: Features) -> dict[str, float]:
    """SST2/SICK-E: one model per C on the training set; the best on dev is scored on test."""
    models = _grid_fit(train, [np.arange(len(train.y))], Preconditioner.fit(train.x))
    dev_acc = accuracy(models, dev.x, dev.y, torch.ones(len(C_GRID), len(dev.y), dtype=torch.bool, device=dev.x.device))
    best = int(np.argmax(dev_acc))
    one = LogisticModels(models.weight[best:best + 1], models.bias[best:best + 1])
    acc = float((one.predict(test.x)[0] == test.y).double().mean())
    return {"acc": 100 * acc, "dev_acc": 100 * float(dev_acc[best]), "C": C_GRID[best]}


# --- relatedness: Tai et al. (2015) soft labels, as in the skip-thought paper section 3.2 -----------------

def score_classes(scores: np.ndarray) -> np.ndarray:
    """The integer classes spanning the scores: 1..5 for SICK, 0..5 for STS-B (whose scores start at 0)."""
    return np.arange(np.floor(scores.min()), np.ceil(scores.max()) + 1)


def soft_labels(scores: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Distribution over ``classes`` whose expectation is the score: p[floor(y)] = floor(y) - y + 1,
    p[floor(y) + 1] = y - floor(y)."""
    if scores.min() < classes[0] or scores.max() > classes[-1]:
        raise ValueError(f"scores in [{scores.min()}, {scores.max()}] fall outside the classes {classes[0]}..{classes[-1]}")
    lower = np.floor(scores).astype(np.int64) - int(classes[0])
    frac = scores - np.floor(scores)
    p = np.zeros((len(scores), len(classes)))
    p[np.arange(len(scores)), lower] = 1 - frac
    upper = np.minimum(lower + 1, len(classes) - 1)  # a score equal to the top class has frac 0 there
    p[np.arange(len(scores)), upper] += frac
    return p


def relatedness_regression(x_train: np.ndarray, y_train: np.ndarray, x_dev: np.ndarray, y_dev: np.ndarray,
                           x_test: np.ndarray, y_test: np.ndarray, device: str, seed: int,
                           batch_size: int = 64, patience: int = 5, max_epochs: int = 200) -> dict[str, float]:
    """Logistic regression onto the soft labels (KL divergence, Tai et al.), predicted score = classes . p;
    Adam, early stopping on dev Pearson (best epoch kept). Test Pearson/Spearman x100 and MSE."""
    classes = score_classes(y_train)
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    as_tensor = lambda a: torch.as_tensor(np.asarray(a, dtype=np.float32), device=device)  # noqa: E731
    xt, xd, xs = as_tensor(x_train), as_tensor(x_dev), as_tensor(x_test)
    targets = as_tensor(soft_labels(y_train, classes))
    r = as_tensor(classes)
    model = torch.nn.Linear(xt.shape[1], len(classes)).to(device)
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-3)

    def predict(x: torch.Tensor) -> np.ndarray:
        with torch.no_grad():
            return (torch.softmax(model(x), dim=1) @ r).cpu().numpy()

    best, best_state, stale = -np.inf, None, 0
    for _ in range(max_epochs):
        for batch in torch.randperm(len(xt), generator=generator).split(batch_size):
            optimiser.zero_grad()
            loss = F.kl_div(torch.log_softmax(model(xt[batch]), dim=1), targets[batch], reduction="batchmean")
            loss.backward()
            optimiser.step()
        dev_r = pearsonr(predict(xd), y_dev)[0]
        if dev_r > best:
            best, best_state, stale = dev_r, {k: v.clone() for k, v in model.state_dict().items()}, 0
        else:
            stale += 1
            if stale >= patience:
                break
    if best_state is None:
        raise ValueError("dev Pearson is undefined (constant predictions): the features carry no signal")
    model.load_state_dict(best_state)
    pred = predict(xs)
    return {"pearson": 100 * float(pearsonr(pred, y_test)[0]), "spearman": 100 * float(spearmanr(pred, y_test)[0]),
            "mse": float(np.mean((pred - y_test) ** 2)), "dev_pearson": 100 * float(best)}
