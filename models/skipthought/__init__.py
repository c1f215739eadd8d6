"""Skip-thought vectors (Kiros et al. 2015): network, objective, generation, vocabulary expansion.

Importing the package registers the ``skipthought`` objective and the ``skipthought`` view kind.
"""

from skipview.models.skipthought import objective, view  # noqa: F401  (registration side effects)
