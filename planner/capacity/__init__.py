"""Capacity: instance types, pools, policies and their quota shares."""
