"""Routes of the advisor API: /api/sweeps/."""

from rest_framework.routers import SimpleRouter

from planner.advisor.api import views

router = SimpleRouter()
router.register("sweeps", views.SweepViewSet)
urlpatterns = router.urls
