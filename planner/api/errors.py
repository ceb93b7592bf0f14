"""How the API reports errors: DRF's shapes, plus Django validation and protected deletes.

Bad input of a trace upload is ``{"error": {"row", "field", "message"}}`` (``input_error``).
"""

from __future__ import annotations

import logging

from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import ProtectedError
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from planner.outages import OUTAGES, RETRY_AFTER_SECONDS, outage_message
from planner.serving import IncompleteBody
from planner.studies.limits import SETTING, HeavyTaskLimit
from scheduling.errors import InputError

log = logging.getLogger("planner.outages")


def as_drf(error: DjangoValidationError) -> serializers.ValidationError:
    """A Django ValidationError (from a model's clean) as DRF's, keeping the field names."""
    if hasattr(error, "error_dict"):
        detail = {
            ("non_field_errors" if field == "__all__" else field): messages
            for field, messages in error.message_dict.items()
        }
        return serializers.ValidationError(detail)
    return serializers.ValidationError({"non_field_errors": error.messages})


def input_error(error: InputError, http_status: int = status.HTTP_400_BAD_REQUEST) -> Response:
    return Response({"error": error.as_dict()}, status=http_status)


def exception_handler(exc, context):
    if isinstance(exc, OUTAGES):  # the broker or the throttle's Redis is down: 503, not 500
        message = outage_message(exc)
        log.warning("503 on the API: %s (%s)", message, exc)
        return Response(
            {"detail": message},
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        )
    if isinstance(exc, RequestDataTooBig):  # an upload stopped while streaming (planner.traces.uploads)
        return input_error(InputError(str(exc), field="file"), status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    if isinstance(exc, IncompleteBody):  # a body that stalled or ended short (planner.serving)
        return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, HeavyTaskLimit):
        return Response(
            {"detail": exc.message, "limit": exc.limit, "setting": SETTING},
            status=status.HTTP_429_TOO_MANY_REQUESTS,
        )
    if isinstance(exc, DjangoValidationError):
        exc = as_drf(exc)
    if isinstance(exc, serializers.ValidationError) and isinstance(exc.detail, list):
        # A bare list (raised outside a serializer's fields): the API's 400 is always an object.
        exc = serializers.ValidationError({"non_field_errors": exc.detail})
    if isinstance(exc, ProtectedError):
        names = ", ".join(sorted({str(obj) for obj in exc.protected_objects})[:5])
        return Response(
            {"detail": f"still in use by {names}: delete or change those first"},
            status=status.HTTP_409_CONFLICT,
        )
    return drf_exception_handler(exc, context)
