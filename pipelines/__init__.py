"""The Dagster code location of urbex (thin: every asset calls one ``urbex`` function)."""
