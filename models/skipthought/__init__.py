"""Skip-thought vectors (Kiros et al. 2015): network, objective, generation, vocabulary expansion.

Nothing is imported here: loading a skip-thought model needs ``view`` alone (``SentenceEncoder.load`` imports it by
its view kind), not the objective and its decoders.
"""
