"""Routes of the traces API."""

from rest_framework.routers import SimpleRouter

from planner.traces.api import views

router = SimpleRouter()
router.register("traces", views.TraceViewSet)
urlpatterns = router.urls
