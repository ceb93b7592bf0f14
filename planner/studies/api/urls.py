"""Routes of the studies API."""

from rest_framework.routers import SimpleRouter

from planner.studies.api import views

router = SimpleRouter()
router.register("studies", views.StudyViewSet)
router.register("runs", views.RunViewSet)
urlpatterns = router.urls
