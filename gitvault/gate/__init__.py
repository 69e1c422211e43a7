"""The verification gate of SPEC §5: static scan, OS sandbox, gate records."""
