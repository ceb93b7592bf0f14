"""``/api/me/``: who am I and what may I do; ``/api/tokens/``: create, rotate or revoke my own
API token. Tokens can also be made with a password (HTTP Basic) so scripts can bootstrap."""

from __future__ import annotations

from drf_spectacular.authentication import BasicScheme
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.authentication import BasicAuthentication, SessionAuthentication, TokenAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import AuthenticationFailed, Throttled
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from planner.accounts.api.serializers import MeSerializer, TokenSerializer
from planner.accounts.permissions import can_edit, can_read_finance, role_of
from planner.accounts.throttle import client_address, locked_for, wait_text


class ThrottledBasicAuthentication(BasicAuthentication):
    """HTTP Basic whose repeated wrong passwords answer 429 with Retry-After once the username or
    address is locked (``planner.accounts.throttle``), instead of a 401 that invites the next guess."""

    def authenticate_credentials(self, userid, password, request=None):
        try:
            return super().authenticate_credentials(userid, password, request)
        except AuthenticationFailed:
            wait = locked_for(userid, client_address(request))
            if wait:
                raise Throttled(
                    wait=wait, detail=f"Too many wrong passwords: try again in {wait_text(wait)}."
                ) from None
            raise


class ThrottledBasicScheme(BasicScheme):
    """The OpenAPI security scheme of ThrottledBasicAuthentication: HTTP Basic, as DRF's."""

    target_class = ThrottledBasicAuthentication


class MeView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses=MeSerializer)
    def get(self, request):
        user = request.user
        return Response(
            {
                "username": user.get_username(),
                "role": role_of(user),
                "can_edit": can_edit(user),
                "can_read_finance": can_read_finance(user),
            }
        )


class TokenView(APIView):
    """Each user manages only their own token."""

    authentication_classes = [TokenAuthentication, ThrottledBasicAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticated]

    @extend_schema(responses={200: TokenSerializer, 404: OpenApiResponse(description="no token yet")})
    def get(self, request):
        token = Token.objects.filter(user=request.user).first()
        if token is None:
            return Response({"detail": "you have no API token: POST here to create one"}, status=404)
        return Response({"key": f"{token.key[:6]}...", "created": token.created})

    @extend_schema(request=None, responses={201: TokenSerializer})
    def post(self, request):
        """Create a token, replacing (revoking) the previous one."""
        Token.objects.filter(user=request.user).delete()
        token = Token.objects.create(user=request.user)
        return Response({"key": token.key, "created": token.created}, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={204: None})
    def delete(self, request):
        Token.objects.filter(user=request.user).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)
