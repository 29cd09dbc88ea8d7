"""Regression workflows: one golden against many targets (:mod:`.nway`), and the diff of
two compare reports (:mod:`.diff`)."""
