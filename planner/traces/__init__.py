"""Traces: what teams actually ran, stored once as a columnar ``.npz`` file with its summary."""
