"""Roles (admin, finance, viewer), the permission checks built on them, and API tokens."""
