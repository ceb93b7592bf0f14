from django.apps import AppConfig


class CapacityConfig(AppConfig):
    name = "planner.capacity"
    label = "capacity"
    verbose_name = "Capacity and policies"
