"""Generated code: one fastjsonschema predicate a schema kind (``haytham.format.schema``).

``python -m haytham.format.schema`` writes the modules; a test fails when one is stale.
"""
