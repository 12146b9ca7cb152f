"""Which of today's declared claims `claims.power.check_alternative` would refuse, and why: the
inventory the phase that wires the check into `ClaimSpec.__post_init__` works through (issue 49:
each refused claim is re-declared from theory first, then the check is switched on).

Run: `python -m tests.helpers.alternatives` (one line per evidence claim: kind, claim, rule,
alternative, and the refusal or "ok"); `refusals()` for tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from attnsim.claims import power
from attnsim.claims.engine import ClaimSpec


@dataclass(frozen=True)
class Entry:
    kind: str
    claim_id: str
    rule: str  # the rule's threshold text
    alternative: float
    refusal: str  # "" when the alternative lies where the rule says fails


def entries() -> list[Entry]:
    """Every declared evidence claim of every registered kind, in registry order."""
    from attnsim.kinds import all_kinds

    found = []
    for name, kind in all_kinds().items():
        for spec in kind.submodule("claims").CLAIMS:
            if not isinstance(spec, ClaimSpec) or spec.role != "evidence":
                continue
            value = spec.alternative.value if spec.alternative is not None else math.nan
            refusal = power.alternative_refusal(spec.claim_id, spec.rule, value)
            found.append(Entry(name, spec.claim_id, spec.rule.threshold(), value, refusal))
    return found


def refusals() -> list[Entry]:
    return [e for e in entries() if e.refusal]


def main() -> None:
    rows = entries()
    for e in rows:
        print(f"{e.kind:24} {e.claim_id:44} alt {e.alternative:<10.4g} {e.refusal or 'ok'}")
    print(f"{len(refusals())} of {len(rows)} evidence claims would be refused")


if __name__ == "__main__":
    main()
