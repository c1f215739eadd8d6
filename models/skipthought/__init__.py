"""Skip-thought vectors (Kiros et al. 2015): network, objective, generation, vocabulary expansion."""
