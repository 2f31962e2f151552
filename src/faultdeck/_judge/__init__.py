"""_judge: a stage of faultdeck's pipeline (see faultdeck/__init__.py)."""
