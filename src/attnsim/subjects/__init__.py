"""What the essay's arguments are about, one frozen record each, at the bottom of the science
layer: the attention normalisers (`normalisers`) and the logit-noise families (`noise_families`).

A record holds everything about its subject that the kernels, the theory and the claims ask: its
map (or its law), its derivative, its parameters, and its data-only properties (does it sum to
one, is it bounded in ratio, do its weights freeze at large logits...). The kernels compute with a
record, the theory dispatches its laws on a record's properties, the claims select and word their
verdicts by them and carry the record's name as their `subject`; no module above keeps a list of
names or a property of its own. Each registry is one tuple in its module; an unknown name fails
loudly wherever it is looked up (`get`).

A property nobody has derived for a record is `Unknown(reason)`, never a guess: a law that needs
it answers "not predicted" (NaN in a theory column, the verdict `not predicted` in the claims
table), and testing an Unknown for truth raises, so no code can read one as yes or no.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Unknown:
    """A property not derived for this subject, with the reason (what is missing)."""

    reason: str

    def __bool__(self) -> bool:
        raise TypeError(f"an unknown property has no truth value ({self.reason}): ask `known()`")


def known(value: object) -> bool:
    """Whether a property is known (not `Unknown`)."""
    return not isinstance(value, Unknown)
