"""The library kinds judge their claims with: `engine` (claims, regimes, verdicts) and `numbers`
(the essay's statements). Reading summaries and writing the claims tables is `attnsim.report`."""
