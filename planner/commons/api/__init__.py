"""REST API of the commons app: serializers, views and routes."""
