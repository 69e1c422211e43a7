"""Skill runs: recording one (``record-run``'s whole work), parsing lines into per-skill
columns, the cached reader, health/drift/flag rules, the JSON reports every front end
prints, and the dashboard.
"""
