"""REST API of the accounts app: serializers, views and routes."""
