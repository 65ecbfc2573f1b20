"""Uncertainty of every score: the geometry of the observed counts and of each bootstrap replicate
(:mod:`.replicates`, through the estimators), intervals, P(first) and ranking stability
(:mod:`.bootstrap`), the interval formulas (:mod:`._intervals`). Above the estimators and the
scores: the scores stay pure functions on distances."""
