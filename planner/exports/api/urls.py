"""Routes of the exports API."""

from django.urls import path

from planner.exports.api import views

urlpatterns = [
    path(
        "policies/<int:pk>/export/aws-batch/",
        views.AwsBatchExportView.as_view(),
        name="policy-export-aws-batch",
    ),
    path("policies/<int:pk>/export/kueue/", views.KueueExportView.as_view(), name="policy-export-kueue"),
    path("policy-imports/", views.PolicyImportView.as_view(), name="policy-imports"),
]
