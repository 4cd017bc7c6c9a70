"""Loops that run experiments and read their analysis between runs: a seed's table reproduced until
its verdicts are decided. The run path below never reads analysis; a study does, one floor up."""
