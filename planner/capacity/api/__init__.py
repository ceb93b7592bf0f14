"""REST API of the capacity app: serializers, views and routes."""
