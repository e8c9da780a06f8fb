"""LangGraph's conformance spec of ``delta_channel_history``, vendored from its main branch
(each file's first line says from where) until a release of ``langgraph-checkpoint-conformance``
ships it; ``tests/langgraph_conformance.py`` runs it beside the installed suite."""
