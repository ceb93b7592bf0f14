from django.apps import AppConfig


class ForecastsConfig(AppConfig):
    name = "planner.forecasts"
    label = "forecasts"
    verbose_name = "When will my job start: forecasts from a queue snapshot"
