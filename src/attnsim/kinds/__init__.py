"""Registry of experiment kinds by name."""

from __future__ import annotations

from attnsim.kinds.base import Kind
from attnsim.kinds.init_gradient import KIND as INIT_GRADIENT
from attnsim.kinds.logit_entropy import KIND as LOGIT_ENTROPY
from attnsim.kinds.noisy_attention import KIND as NOISY_ATTENTION
from attnsim.kinds.temperature_entropy import KIND as TEMPERATURE_ENTROPY

KINDS: dict[str, Kind] = {k.name: k for k in (NOISY_ATTENTION, LOGIT_ENTROPY, TEMPERATURE_ENTROPY, INIT_GRADIENT)}


def get_kind(name: str) -> Kind:
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"unknown experiment kind {name!r}; expected one of {', '.join(KINDS)}") from None
