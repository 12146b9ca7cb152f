"""Registry of experiment kinds by name."""

from __future__ import annotations

from attnsim.kinds.base import Kind
from attnsim.kinds.noisy_attention import KIND as NOISY_ATTENTION

KINDS: dict[str, Kind] = {k.name: k for k in (NOISY_ATTENTION,)}


def get_kind(name: str) -> Kind:
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"unknown experiment kind {name!r}; expected one of {', '.join(KINDS)}") from None
