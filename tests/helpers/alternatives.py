"""Which of the declared claims `claims.power.check_alternative` would refuse, and why (issue 49).
`ClaimSpec.__post_init__` refuses every evidence claim with an invalid alternative when it is
declared, so for the built-in kinds this lists none (tests/claims/test_design_role.py); a
plugin's author runs it to see each evidence claim's alternative beside its rule.

Run: `python -m tests.helpers.alternatives` (one line per evidence claim: kind, claim, rule,
alternative, and the refusal or "ok"; then the refused count per kind); `refusals()` for tests.
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
    refused = [e for e in rows if e.refusal]
    for kind in dict.fromkeys(e.kind for e in refused):
        print(f"{kind}: {sum(e.kind == kind for e in refused)} refused (pending)")
    print(f"{len(refused)} of {len(rows)} evidence claims would be refused")


if __name__ == "__main__":
    main()
