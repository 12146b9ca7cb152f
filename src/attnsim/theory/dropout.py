"""Attention dropout as noise on the weights (docs/science.md §11.6).

Keep mask m_i ~ Bernoulli(q), q = 1 - rate, i.i.d. over keys.

- As transformers apply it: w~_i = p_i m_i / q, not renormalised. E w~ = p, so E o~ = o exactly and
  E|o~ - o|^2 = (rate / q) sum_i p_i^2 |v_i|^2, exactly: note |v_i|, not |v_i - o|.
- As logit noise (eps_i = -inf where dropped, 0 where kept, then the softmax renormalises):
  e^eps = m, so u = m / q - 1 has kappa = rate / q, mu3 = rate (rate - q) / q^2,
  mu4 = rate (rate^3 + q^3) / q^3, every moment finite: the essay's delta method and the next
  order of §2.8 apply with these.
"""

from __future__ import annotations

import math


def u_moments(rate: float) -> tuple[float, float, float]:
    """(kappa, mu3, mu4) of u = m / q - 1, m ~ Bernoulli(q), q = 1 - rate."""
    q = 1.0 - rate
    return rate / q, rate * (rate - q) / q**2, rate * (rate**3 + q**3) / q**3


def kappa(rate: float) -> float:
    return rate / (1.0 - rate)


def first_correction(rate: float) -> float:
    """|3 kappa^2 - 2 mu3| / kappa: the first correction of the delta method is this times sum p^2
    (docs/science.md §2.8); 0 at rate 0."""
    if rate == 0:
        return 0.0
    k, mu3, _ = u_moments(rate)
    return abs(3 * k * k - 2 * mu3) / k


def all_dropped(rate: float, n: int) -> float:
    """Probability that a mask drops every key (the logit form's output is then 0)."""
    return math.exp(n * math.log(rate)) if rate > 0 else 0.0
