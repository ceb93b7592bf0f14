"""The REST API root: routes of every app under /api/, the OpenAPI schema and Swagger UI."""
