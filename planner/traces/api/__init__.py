"""REST API of the traces app: serializers, views and routes."""
