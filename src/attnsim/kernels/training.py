"""What the training kernels share: the optimisers, batched over trials, the evaluation
schedule, the training loop and the checks of the training parameters.

Every array handled here has the trials on its leading axis; an optimiser updates all the
trials of a block at once, and a trial whose weights stop being finite is reset (weights and
moments to 0) so that NaN never spreads, the kernel recording the step at which it happened.
A kernel whose runs stop early (at a loss threshold) keeps only its unfinished trials in its
working arrays (`Optimiser.keep`), so a stopped run costs nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from attnsim.errors import ConfigError

OPTIMISERS = ("sgd", "adam")
# normgd: W -= lr g / ||g||_F per weight array and trial (the step's size fixed, only its direction
# from the gradient; no step where g = 0 exactly)
NORMALISED = "normgd"
# randdir: the control of normgd, a step of the same size (Frobenius norm lr per weight array and
# trial) in a random direction drawn from the run's own stream (`direction_streams`): it moves
# the weights as far as normgd does but carries no information from the loss
RANDOM_DIRECTION = "randdir"
ALL_OPTIMISERS = (*OPTIMISERS, NORMALISED, RANDOM_DIRECTION)
# the last-but-one entry of a direction stream's spawn key (after the block's key, before the
# trial): "dir" in ASCII, so the streams never coincide with a block's or a spawned child's
DIRECTION_KEY = 0x646972
ADAM_BETA1, ADAM_BETA2, ADAM_EPS = 0.9, 0.999, 1e-8
CHECKPOINTS = 8  # loss_ckpt_0 .. loss_ckpt_7
# evaluation grid: round(steps^(j / 28)), j = 0..28 (contains the checkpoints)
EVALS_PER_CHECKPOINT = 4


def round_half_up(x: float) -> int:
    return math.floor(x + 0.5)


def checkpoint_steps(steps: int) -> list[int]:
    """Step after which checkpoint j is measured: round(steps^(j/7)), j = 0..7 (j = 0: after
    step 1)."""
    return [round_half_up(steps ** (j / (CHECKPOINTS - 1))) for j in range(CHECKPOINTS)]


def evaluation_steps(steps: int, per_checkpoint: int = EVALS_PER_CHECKPOINT) -> list[int]:
    """Steps after which the monitor loss is measured (besides step 0): round(steps^(j/(7 k))),
    j = 0..7k with k = `per_checkpoint`, without repeats; a superset of `checkpoint_steps` (j/7
    and kj/(7k) are the same float: IEEE division is correctly rounded)."""
    count = (CHECKPOINTS - 1) * per_checkpoint
    return sorted({round_half_up(steps ** (j / count)) for j in range(count + 1)})


def direction_streams(rng: np.random.Generator, trials: int) -> list[np.random.Generator]:
    """One generator per trial of the block for `randdir`'s directions: SeedSequence(entropy of
    the block's, spawn_key = (*the block's key, DIRECTION_KEY, trial)). Derived from the block's
    seed, not drawn from `rng`, so the block's data are the same numbers as without the control
    (normgd and randdir runs share data and initial weights), and a trial's directions do not
    depend on when the other trials stop."""
    block = rng.bit_generator.seed_seq
    if not isinstance(block, np.random.SeedSequence):
        raise ValueError("randdir needs a generator seeded by a SeedSequence")
    return [
        np.random.Generator(
            np.random.SFC64(
                np.random.SeedSequence(
                    block.entropy, spawn_key=(*block.spawn_key, DIRECTION_KEY, t)
                )
            )
        )
        for t in range(trials)
    ]


def random_directions(
    streams: Sequence[np.random.Generator], shapes: Sequence[tuple[int, ...]]
) -> list[np.ndarray]:
    """Per weight array (T, *shape), standard normal entries: trial t's from streams[t], one draw
    of all its arrays' entries per step, in the arrays' order (float64)."""
    sizes = [math.prod(shape) for shape in shapes]
    draws = np.stack([stream.standard_normal(sum(sizes)) for stream in streams])
    ends = np.cumsum(sizes)[:-1].tolist()
    return [
        part.reshape(len(streams), *shape)
        for part, shape in zip(np.split(draws, ends, axis=1), shapes)
    ]


def normalised_step(weights: list[np.ndarray], directions: list[np.ndarray], lr: float) -> None:
    """w -= lr g / ||g||_F per array and trial, in place; no step where g = 0 exactly. The norm
    is taken of g / max|g| (exact scaling by the largest entry per trial), so a gradient of 1e-300,
    whose square would underflow, still has its direction."""
    for w, g in zip(weights, directions):
        axes = tuple(range(1, g.ndim))
        big = np.max(np.abs(g), axis=axes, keepdims=True)
        unit = np.divide(g, big, out=np.zeros_like(g), where=big > 0)
        norm = np.sqrt(np.sum(unit * unit, axis=axes, keepdims=True))
        w -= np.divide(lr * unit, norm, out=np.zeros_like(g), where=norm > 0)


class Optimiser:
    """SGD (w -= lr g), Adam (beta1 = 0.9, beta2 = 0.999, eps = 1e-8, bias-corrected),
    normalised gradient descent (w -= lr g / ||g||_F per array and trial) or its random-direction
    control (w -= lr z / ||z||_F, z standard normal from the trial's stream in `directions`) on a
    list of weight arrays (T, ...), updated in place."""

    def __init__(
        self,
        name: str,
        lr: float,
        weights: list[np.ndarray],
        directions: Sequence[np.random.Generator] = (),
    ):
        self.adam = name == "adam"
        self.normalised = name == NORMALISED
        self.random = name == RANDOM_DIRECTION
        if self.random and len(directions) != weights[0].shape[0]:
            raise ValueError("randdir needs one direction stream per trial")
        self.directions = list(directions)
        self.lr = float(lr)
        self.m = [np.zeros_like(w) for w in weights] if self.adam else []
        self.v = [np.zeros_like(w) for w in weights] if self.adam else []

    @property
    def needs_gradient(self) -> bool:
        return not self.random

    def update(self, weights: list[np.ndarray], grads: list[np.ndarray] | None, step: int) -> None:
        """Apply step number `step` (1-based: Adam's bias correction uses it); `grads` is not read
        by randdir (None there)."""
        if self.random:
            shapes = [w.shape[1:] for w in weights]
            normalised_step(weights, random_directions(self.directions, shapes), self.lr)
            return
        assert grads is not None
        if self.normalised:
            normalised_step(weights, grads, self.lr)
            return
        if not self.adam:
            for w, g in zip(weights, grads):
                w -= self.lr * g
            return
        c1, c2 = 1.0 - ADAM_BETA1**step, 1.0 - ADAM_BETA2**step
        for w, g, m, v in zip(weights, grads, self.m, self.v):
            m *= ADAM_BETA1
            m += (1.0 - ADAM_BETA1) * g
            v *= ADAM_BETA2
            v += (1.0 - ADAM_BETA2) * (g * g)
            w -= self.lr * (m / c1) / (np.sqrt(v / c2) + ADAM_EPS)

    def reset(self, weights: list[np.ndarray], trials: np.ndarray) -> None:
        """Zero the weights and moments of the masked trials."""
        for x in (*weights, *self.m, *self.v):
            x[trials] = 0.0

    def keep(self, trials: np.ndarray) -> None:
        """Keep only the state of the selected trials (a mask or indices, on the leading axis),
        for a kernel that drops its finished runs from its working arrays."""
        self.m = [m[trials] for m in self.m]
        self.v = [v[trials] for v in self.v]
        if self.directions:
            self.directions = [self.directions[t] for t in np.arange(len(self.directions))[trials]]


def not_finite(weights: list[np.ndarray]) -> np.ndarray:
    """(T,) True where any weight of the trial is NaN or infinite."""
    ok = np.ones(weights[0].shape[0], dtype=bool)
    for w in weights:
        ok &= np.isfinite(w).reshape(w.shape[0], -1).all(axis=1)
    return ~ok


def check_integer(p: Mapping, key: str, minimum: int, what: str) -> None:
    if key not in p:
        raise ConfigError(f"{key}: missing")
    value = p[key]
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ConfigError(f"{key}: expected an integer, got {value!r}")
    if value < minimum:
        raise ConfigError(f"{key}: need at least {minimum} {what}, got {value}")


def check_number(p: Mapping, key: str, positive: bool = True) -> None:
    """A finite number, > 0 if `positive` else >= 0."""
    value = p.get(key)
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float, np.integer, np.floating))
        or not math.isfinite(value)
    ):
        raise ConfigError(f"{key}: expected a finite number, got {value!r}")
    if positive and value <= 0:
        raise ConfigError(f"{key}: must be > 0, got {value}")
    if not positive and value < 0:
        raise ConfigError(f"{key}: must be >= 0, got {value}")


def check_training(p: Mapping, optimisers: Sequence[str] = OPTIMISERS) -> None:
    """The parameters every training kind has: steps >= 1, lr > 0, a known optimiser."""
    check_integer(p, "steps", 1, "training step(s)")
    if p.get("optimiser") not in optimisers:
        known = ", ".join(optimisers)
        raise ConfigError(
            f"optimiser: unknown optimiser {p.get('optimiser')!r}; expected one of {known}"
        )
    check_number(p, "lr")


def check_choice(p: Mapping, key: str, choices: Sequence[str]) -> None:
    if p.get(key) not in choices:
        raise ConfigError(f"{key}: expected one of {', '.join(choices)}, got {p.get(key)!r}")


# --------------------------------------------------------------------------- the loop


def train(runs: Sequence, draw: Callable[[], object], record: list | None = None) -> None:
    """The training loop of a block: per step one minibatch for all the block's trials, drawn
    whether or not a run still needs it (a trial's data never depends on when another stopped),
    then the step of every run that has not finished. A run has `steps` (its budget),
    `step(batch, step)` and optionally `finished` (True once all its trials have stopped); the loop
    ends at the largest budget, or once every run has finished (nothing drawn after that is used).
    With `record`, every minibatch is appended to it (tests)."""
    last = max(int(run.steps) for run in runs)
    for step in range(1, last + 1):
        if all(getattr(run, "finished", False) or step > run.steps for run in runs):
            return
        batch = draw()
        if record is not None:
            record.append(batch)
        for run in runs:
            if step <= run.steps and not getattr(run, "finished", False):
                run.step(batch, step)


# --------------------------------------------------------------------------- summaries


def quantiles(values: np.ndarray, probs=(0.25, 0.5, 0.75)) -> list[float]:
    """Quantiles over all trials with +inf (a diverged run's loss) ranked last: linear
    interpolation between neighbours, the neighbour itself when it falls exactly on one, and +inf
    as soon as the upper neighbour is +inf (so no inf - inf = NaN). NaN trials are not expected
    in the columns this is used on; they would rank after +inf."""
    x = np.sort(np.asarray(values, dtype=np.float64))
    out = []
    for prob in probs:
        pos = prob * (x.size - 1)
        lo, frac = int(math.floor(pos)), pos - math.floor(pos)
        if frac == 0:
            out.append(float(x[lo]))
        elif not np.isfinite(x[lo + 1]):
            out.append(float(x[lo + 1]))
        else:
            out.append(float(x[lo] + frac * (x[lo + 1] - x[lo])))
    return out


def block_points(
    points: Sequence[Mapping], resolved, validate, stream_params: Sequence[str]
) -> list[dict]:
    """The block's points with their defaults filled in (`resolved`) and checked (`validate`: what
    the kind's parameter declarations cannot say, e.g. one parameter against another; None when
    they say it all, the config's schema having checked each value against them); they must
    share the parameters that shape the draws, or their common random numbers would mean nothing."""
    if not points:
        raise ValueError("no points")
    out = [resolved(p) for p in points]
    for p in out if validate is not None else ():
        validate(p)
    stream = [out[0][k] for k in stream_params]
    for p in out[1:]:
        if [p[k] for k in stream_params] != stream:
            raise ValueError(f"points of one block must share {tuple(stream_params)}")
    return out
