"""Generated code: one fastjsonschema predicate a schema kind (``haytham.format.schema``).

``python3 dev.py schemas`` writes the modules; a test fails when one is stale.
"""
