"""MLflow tracking: the tracking store, run bookkeeping (params, lineage tags, resume), and the encoder as a
pyfunc model."""
