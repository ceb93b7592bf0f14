"""REST API of the studies app: serializers, views and routes."""
