"""Routes of the curves API: /api/curves/ and /api/worth-searches/."""

from rest_framework.routers import SimpleRouter

from planner.curves.api import views

router = SimpleRouter()
router.register("curves", views.CurveViewSet)
router.register("worth-searches", views.WorthSearchViewSet)
urlpatterns = router.urls
