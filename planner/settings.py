"""Django settings, every one read from the environment through the small typed helpers below.

With no environment at all the planner runs on a laptop: SQLite and media under ``var/``,
and a Celery broker on the filesystem (no server). Production sets ``DATABASE_URL``,
``REDIS_URL``, ``SECRET_KEY`` and ``ALLOWED_HOSTS``.
"""

import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("PLANNER_VAR_DIR", BASE_DIR / "var"))


def env_str(name: str, default: str = "") -> str:
    """The variable's value; unset or empty gives ``default``."""
    return os.environ.get(name) or default


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


_Number = TypeVar("_Number", int, float)


def _env_number(name: str, default: _Number, parse: Callable[[str], _Number], what: str) -> _Number:
    """``parse`` of the variable, ``default`` when unset or empty; a value it cannot read stops the
    start with the variable named (ImproperlyConfigured), not with a bare ValueError."""
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return parse(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not {what}") from None


def env_int(name: str, default: int) -> int:
    return _env_number(name, default, int, "a whole number")


def env_float(name: str, default: float) -> float:
    return _env_number(name, default, float, "a number")


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in env_str(name, default).split(",") if item.strip()]


DEBUG = env_bool("DEBUG", False)


def local_secret_key(path: Path) -> str:
    """A random key made once per installation (``var/secret_key``) when SECRET_KEY is unset."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        temporary.write_text(secrets.token_urlsafe(50))
        temporary.chmod(0o600)
        try:
            os.link(temporary, path)  # fails if another process made it first: keep theirs
        except FileExistsError:
            pass
        finally:
            temporary.unlink()
    return path.read_text().strip()


def checked_secret_key(key: str) -> str:
    """``key`` when it is as strong as Django's own check asks (security.W009: at least 50
    characters, at least 5 different ones); otherwise refuse to start, saying how to fix it."""
    from django.core.checks.security.base import SECRET_KEY_MIN_LENGTH, SECRET_KEY_MIN_UNIQUE_CHARACTERS

    if len(key) < SECRET_KEY_MIN_LENGTH or len(set(key)) < SECRET_KEY_MIN_UNIQUE_CHARACTERS:
        raise ImproperlyConfigured(
            f"SECRET_KEY is too weak for production ({len(key)} characters, {len(set(key))} different): "
            f"give at least {SECRET_KEY_MIN_LENGTH} characters, "
            f"{SECRET_KEY_MIN_UNIQUE_CHARACTERS} or more of them different, "
            "e.g. python -c 'import secrets; print(secrets.token_urlsafe(50))', "
            "or unset it to use the random key kept in var/secret_key (DEBUG=1 accepts any key)"
        )
    return key


SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    SECRET_KEY = "development-only-key" if DEBUG else local_secret_key(VAR_DIR / "secret_key")
elif not DEBUG:
    SECRET_KEY = checked_secret_key(SECRET_KEY)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost" if DEBUG else "")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "planner.accounts",
    "planner.capacity",
    "planner.traces",
    "planner.studies",
    "planner.api",
    "planner.demo",
    "planner.calibration",
    "planner.exports",
    "planner.commons",
    "planner.advisor",
    "planner.curves",
    "planner.forecasts",
]
if (BASE_DIR / "planner" / "web" / "__init__.py").exists():
    INSTALLED_APPS.append("planner.web")  # the browser pages, when installed
if (BASE_DIR / "planner" / "reports" / "__init__.py").exists():
    INSTALLED_APPS.append("planner.reports")  # study comparison and finance report pages

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "planner.outages.OutageMiddleware",  # a broker or Redis outage: a 503 page, not a 500
    "planner.missing_files.MissingFileMiddleware",  # a trace's or run's file gone: a 410, not a 500
]

ROOT_URLCONF = "planner.urls"
WSGI_APPLICATION = "planner.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "planner.web.menu.menu",
            ],
        },
    },
]

# --- database -------------------------------------------------------------------------

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'planner.sqlite3'}"), conn_max_age=60
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The web server and a worker write the same file: WAL lets readers go on, IMMEDIATE
    # transactions take the write lock up front so concurrent writers wait instead of failing.
    Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # Tests share their database with real worker processes, so it must be a file; one per
    # test process, so that two test runs in one checkout do not clobber each other.
    DATABASES["default"]["TEST"] = {
        "NAME": env_str("PLANNER_TEST_SQLITE", str(VAR_DIR / f"test-{os.getpid()}.sqlite3"))
    }
else:
    # One test database per test process here too (test_<name>_<pid>), for parallel test runs.
    DATABASES["default"]["TEST"] = {"NAME": f"test_{DATABASES['default']['NAME']}_{os.getpid()}"}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- files ----------------------------------------------------------------------------

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("PLANNER_STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STATICFILES_DIRS = [BASE_DIR / "static"] if (BASE_DIR / "static").is_dir() else []
MEDIA_URL = "media/"
MEDIA_ROOT = Path(env_str("PLANNER_MEDIA_ROOT", str(VAR_DIR / "media")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"
        if not DEBUG
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

# Trace uploads: bigger files are refused before parsing, longer traces while parsing.
PLANNER_MAX_UPLOAD_BYTES = env_int("PLANNER_MAX_UPLOAD_BYTES", 512 * 1024 * 1024)
PLANNER_MAX_TRACE_ROWS = env_int("PLANNER_MAX_TRACE_ROWS", 5_000_000)
# A compressed upload may decompress to no more than a plain upload may be (a gzip bomb is refused
# once this much is inflated, in well under a minute).
PLANNER_MAX_DECOMPRESSED_BYTES = env_int("PLANNER_MAX_DECOMPRESSED_BYTES", PLANNER_MAX_UPLOAD_BYTES)
FILE_UPLOAD_MAX_MEMORY_SIZE = 4 * 1024 * 1024  # larger uploads are streamed to a temporary file
FILE_UPLOAD_HANDLERS = [
    "planner.traces.uploads.LimitedUploadHandler",  # the size limit, counted while streaming
    "planner.traces.uploads.MemoryUploadHandler",  # Django's two, reading 1 MiB at a time
    "planner.traces.uploads.DiskUploadHandler",
]
DATA_UPLOAD_MAX_MEMORY_SIZE = 4 * 1024 * 1024

# --- security when not in development -------------------------------------------------

if not DEBUG:
    SESSION_COOKIE_SECURE = env_bool("PLANNER_SECURE_COOKIES", True)
    CSRF_COOKIE_SECURE = env_bool("PLANNER_SECURE_COOKIES", True)
    SECURE_HSTS_SECONDS = env_int("PLANNER_HSTS_SECONDS", 3600)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("PLANNER_HSTS_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("PLANNER_HSTS_PRELOAD", True)
    SECURE_CONTENT_TYPE_NOSNIFF = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("PLANNER_SSL_REDIRECT", False)

# Repeated wrong passwords lock the username (or the client address) for a while
# (planner.accounts.throttle): the login page, the admin's and HTTP Basic on /api/tokens/.
AUTHENTICATION_BACKENDS = ["planner.accounts.throttle.ThrottledModelBackend"]
PLANNER_LOGIN_FAILURES = env_int("PLANNER_LOGIN_FAILURES", 5)
PLANNER_LOGIN_FAILURES_PER_ADDRESS = env_int("PLANNER_LOGIN_FAILURES_PER_ADDRESS", 20)
PLANNER_LOGIN_WINDOW_SECONDS = env_int("PLANNER_LOGIN_WINDOW_SECONDS", 900)
PLANNER_LOGIN_LOCK_SECONDS = env_int("PLANNER_LOGIN_LOCK_SECONDS", 900)

LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"

# --- REST API -------------------------------------------------------------------------

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",  # first: anonymous calls get 401
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["planner.accounts.permissions.IsPlannerUser"],
    # orjson, after removing the $ figures a role without finance access may not read
    # (planner.accounts.money).
    "DEFAULT_RENDERER_CLASSES": [
        "planner.api.renderers.FastJSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "DEFAULT_PARSER_CLASSES": [
        "planner.api.parsers.BoundedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "planner.api.pagination.Pagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "planner.api.filters.OrderingFilter",
        "planner.api.filters.SearchFilter",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "planner.api.errors.exception_handler",
    # ?format= is a filter (traces by reader), not a renderer override (that answered 404).
    "URL_FORMAT_OVERRIDE": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Planner API",
    "DESCRIPTION": "Quota shares, traces and what-if studies for shared GPU pools.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["planner.accounts.permissions.IsPlannerUser"],  # no schema without a role
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "planner.api.schema.document_errors",
    ],
    "ENUM_NAME_OVERRIDES": {
        "RunStatusEnum": "planner.studies.models.RunStatus",
        # two fields named "mode": a sweep's (grid, ...) and a pool size's (proportional, one_type)
        "SweepModeEnum": "planner.advisor.models.SweepMode",
        "SizeModeEnum": "planner.curves.models.SIZE_MODE_CHOICES",
    },
}

# The default cache stays in each process (rendered tables); the login throttle's counts must be
# shared by every web process: Redis when there is one, else files on this machine.
THROTTLE_CACHE: dict = (
    {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": env_str("REDIS_URL")}
    if env_str("REDIS_URL")
    else {
        "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
        "LOCATION": str(VAR_DIR / "login-throttle"),
    }
)
# Rendered parts of the study, finance and metrics answers kept per process (planner.web.page_cache).
PLANNER_PAGE_CACHE_ENTRIES = env_int("PLANNER_PAGE_CACHE_ENTRIES", 64)
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "login-throttle": {**THROTTLE_CACHE, "KEY_PREFIX": "planner-login-throttle"},
}

# --- Celery: studies replay on workers ------------------------------------------------

REDIS_URL = env_str("REDIS_URL")
BROKER_DIR = Path(env_str("PLANNER_BROKER_DIR", str(VAR_DIR / "broker")))
# Seconds before Redis hands an unacknowledged task (its worker died) to another worker.
BROKER_VISIBILITY_TIMEOUT = env_int("PLANNER_VISIBILITY_TIMEOUT", 3600)
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": BROKER_VISIBILITY_TIMEOUT,
        "unacked_restore_interval": max(1, min(10, BROKER_VISIBILITY_TIMEOUT // 5)),
        "unacked_restore_throttle": 1 if BROKER_VISIBILITY_TIMEOUT < 300 else 10,
    }
else:
    CELERY_BROKER_URL = "filesystem://"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
    }
# The queue the planner's tasks go to and its workers read (a broker shared with other apps, or a
# test's own workers: a worker's start-up reaper sends what it requeues here too).
CELERY_TASK_DEFAULT_QUEUE = env_str("PLANNER_TASK_QUEUE", "celery")
CELERY_TASK_ALWAYS_EAGER = env_bool("PLANNER_CELERY_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

# Run liveness: a running run writes a heartbeat this often; one silent for longer than
# the stale limit has lost its worker and is re-enqueued (or failed after the last attempt).
PLANNER_HEARTBEAT_SECONDS = env_float("PLANNER_HEARTBEAT_SECONDS", 2.0)
PLANNER_HEARTBEAT_STALE_SECONDS = env_float("PLANNER_HEARTBEAT_STALE_SECONDS", 120.0)
# A stale attempt is only started again once its process is gone: one on another host is asked
# through Celery's remote control, and no answer within this many seconds counts as dead.
PLANNER_WORKER_PING_SECONDS = env_float("PLANNER_WORKER_PING_SECONDS", 1.0)
PLANNER_RUN_MAX_ATTEMPTS = env_int("PLANNER_RUN_MAX_ATTEMPTS", 3)
PLANNER_RETRY_DELAY_SECONDS = env_float("PLANNER_RETRY_DELAY_SECONDS", 10.0)
# Studies (and sweeps), curves, worth searches and calibrations a user may have queued or running
# at once (planner/studies/limits.py): the next one is refused with HTTP 429 naming the limit.
PLANNER_MAX_HEAVY_TASKS_PER_USER = env_int("PLANNER_MAX_HEAVY_TASKS_PER_USER", 4)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"one_line_client_errors": {"()": "planner.log.OneLineClientErrors"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler"},
        "requests": {"class": "logging.StreamHandler", "filters": ["one_line_client_errors"]},
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # Django's own handlers (console with DEBUG, mail to ADMINS) replaced, and not propagated to the
    # root as well: each refused request is logged once, in one line.
    "loggers": {
        "django": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO"), "propagate": False},
        "django.request": {"handlers": ["requests"], "level": "WARNING", "propagate": False},
    },
}
