"""The evidence of runs over time: the known-failure baseline and the comparison of two runs."""
