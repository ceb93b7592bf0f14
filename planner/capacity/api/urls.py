"""Routes of the capacity API."""

from rest_framework.routers import SimpleRouter

from planner.capacity.api import views

router = SimpleRouter()
router.register("instance-types", views.InstanceTypeViewSet)
router.register("pools", views.PoolViewSet)
router.register("policies", views.PolicyViewSet)
router.register("shares", views.ShareViewSet)
urlpatterns = router.urls
