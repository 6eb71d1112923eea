"""The one place that reads the environment (docs/DESIGN.md section 8)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Final

from relayline.shared.auth import DEFAULT_TOKEN_TTL, MIN_SECRET_LENGTH
from relayline.shared.database_urls import with_driver
from relayline.shared.origins import parse_origins

DELIVERIES = ("relay", "pusher", "mercure")
AUTH_MODES = ("none", "token", "jwt")
LOG_FORMATS = ("text", "json")
#: what RELAYLINE_JWKS_URL's keys may sign when RELAYLINE_JWT_ALGORITHMS is unset; never
#: HS256 beside them (a public key must not be usable as an HMAC secret)
JWKS_ALGORITHMS = ("RS256", "ES256")
#: variables that keep their own names (no RELAYLINE_ prefix) and that an application's
#: config sets as ``RELAYLINE_<name>`` (``Settings.from_config``)
PLATFORM_NAMES = (
    "DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "SECRET_KEY", "PORT",
    "OPENAI_API_KEY", "OPENAI_BASE_URL", "PUSHER_APP_ID", "PUSHER_KEY", "PUSHER_SECRET",
    "PUSHER_HOST", "PUSHER_PORT", "PUSHER_ENCRYPTION_MASTER_KEY_BASE64", "MERCURE_HUB_URL",
    "MERCURE_PUBLISHER_JWT_KEY", "MERCURE_SUBSCRIBER_JWT_KEY",
)  # fmt: skip
#: Celery pools ``relayline worker`` runs: gevent for I/O-bound turns (the default),
#: threads where a process must not be monkey patched, prefork for CPU-heavy tools
WORKER_POOLS = ("gevent", "threads", "prefork")
#: the most turns one worker process may run at once (each holds a thread, a database
#: connection while it writes, and its in-flight state)
MAX_WORKER_CONCURRENCY = 4096
#: the variables pydantic-ai's providers read their keys from (Settings.model_api_keys)
MODEL_KEY_VARIABLES: Final = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "GROQ_API_KEY",
    "MISTRAL_API_KEY",
    "CO_API_KEY",
    "OPENROUTER_API_KEY",
    "DEEPSEEK_API_KEY",
    "XAI_API_KEY",
    "CEREBRAS_API_KEY",
    "HF_TOKEN",
    "OLLAMA_API_KEY",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
)
#: SECRET_KEY when none is set: fine for local development, refused with RELAYLINE_AUTH=token
DEV_SECRET_KEY: Final = "dev-insecure-secret"


@dataclasses.dataclass(frozen=True)
class PusherSettings:
    """Pusher, or a server speaking its protocol (soketi, Reverb): ``PUSHER_*``."""

    #: PUSHER_APP_ID, the application's id at Pusher (or soketi, Reverb)
    app_id: str | None = None
    #: PUSHER_KEY, the public app key browsers subscribe with
    key: str | None = None
    #: PUSHER_SECRET, signs API requests and channel authorizations
    secret: str | None = None
    #: PUSHER_HOST, the API host name; None: Pusher's own cluster
    host: str | None = None
    #: PUSHER_PORT, a TCP port; None: 443 with TLS (any other port speaks plain HTTP)
    port: int | None = None
    #: PUSHER_ENCRYPTION_MASTER_KEY_BASE64, 32 bytes as base64; set, threads publish on
    #: ``private-encrypted-*`` channels
    encryption_master_key_base64: str | None = None

    @property
    def configured(self) -> bool:
        """Whether relayline can publish to Pusher and authorize its subscribers."""
        return bool(self.app_id and self.key and self.secret)

    @property
    def encrypted(self) -> bool:
        return self.encryption_master_key_base64 is not None


@dataclasses.dataclass(frozen=True)
class MercureSettings:
    """A Mercure hub: ``MERCURE_*``."""

    #: MERCURE_HUB_URL, e.g. ``https://hub.example/.well-known/mercure``
    hub_url: str | None = None
    #: MERCURE_PUBLISHER_JWT_KEY, the HS256 key of the publisher tokens relayline signs
    publisher_jwt_key: str | None = None
    #: MERCURE_SUBSCRIBER_JWT_KEY, the HS256 key of the subscriber tokens it mints
    subscriber_jwt_key: str | None = None

    @property
    def configured(self) -> bool:
        """Whether relayline can publish and mint subscriber tokens: updates are private,
        so a hub without the subscriber key would deliver to nobody."""
        return bool(self.hub_url and self.publisher_jwt_key and self.subscriber_jwt_key)

    def problem(self) -> str | None:
        """Why a key cannot be trusted, or None. Either key signs what a hub trusts (the
        publisher's: updates on any topic; the subscriber's: every private thread), so
        either is held to SECRET_KEY's rule whenever it is set."""
        keys = (
            ("MERCURE_PUBLISHER_JWT_KEY", self.publisher_jwt_key),
            ("MERCURE_SUBSCRIBER_JWT_KEY", self.subscriber_jwt_key),
        )
        for name, key in keys:
            if key is not None and len(key) < MIN_SECRET_LENGTH:
                return (
                    f"{name} must be at least {MIN_SECRET_LENGTH} characters: a shorter "
                    "HS256 key can be guessed from any token signed with it (set the same "
                    "key on the hub)."
                )
        return None


@dataclasses.dataclass(frozen=True)
class JWTSettings:
    """An identity provider's tokens for RELAYLINE_AUTH=jwt: ``RELAYLINE_JWT_*``."""

    #: RELAYLINE_JWT_SECRET, the HS256 secret shared with the provider (at least 32
    #: characters); or else
    secret: str | None = None
    #: RELAYLINE_JWKS_URL, where the provider publishes its public keys (RS256, ES256)
    jwks_url: str | None = None
    #: RELAYLINE_JWT_AUDIENCE, the ``aud`` a token must name (this service)
    audience: str | None = None
    #: RELAYLINE_JWT_ISSUER, the ``iss`` a token must carry (the provider)
    issuer: str | None = None
    #: RELAYLINE_JWT_ALGORITHMS, comma-separated; default HS256 with a secret, else
    #: JWKS_ALGORITHMS
    algorithms: tuple[str, ...] = ()
    #: RELAYLINE_JWT_USER_CLAIM, the claim that names the user
    user_claim: str = "sub"

    @property
    def accepted_algorithms(self) -> tuple[str, ...]:
        return self.algorithms or (("HS256",) if self.secret else JWKS_ALGORITHMS)

    def problem(self) -> str | None:
        """Why token verification cannot be trusted with this configuration, or None."""
        if (self.secret is None) == (self.jwks_url is None):
            return "RELAYLINE_AUTH=jwt needs one of RELAYLINE_JWT_SECRET or RELAYLINE_JWKS_URL."
        if not self.audience or not self.issuer:
            return (
                "RELAYLINE_AUTH=jwt needs RELAYLINE_JWT_AUDIENCE and RELAYLINE_JWT_ISSUER: "
                "a token meant for another service or from another issuer must be refused."
            )
        if self.secret is not None and len(self.secret) < MIN_SECRET_LENGTH:
            return f"RELAYLINE_JWT_SECRET must be at least {MIN_SECRET_LENGTH} characters."
        # Every algorithm is HMAC with a secret, and none is with a key set.
        if {a.startswith("HS") for a in self.accepted_algorithms} != {self.secret is not None}:
            return "RELAYLINE_JWT_ALGORITHMS: HS* goes with a secret, RS*/ES* with a JWKS URL."
        return None


@dataclasses.dataclass(frozen=True)
class Settings:
    """Everything relayline reads from its environment, read once (``from_env``)."""

    #: DATABASE_URL, an SQLAlchemy URL; ``postgres://`` and ``postgresql://`` use psycopg 3
    database_url: str = "sqlite:///relayline.db"
    #: REDIS_URL, relay Pub/Sub and (without CELERY_BROKER_URL) the Celery broker
    redis_url: str | None = None
    #: CELERY_BROKER_URL, when the broker is not REDIS_URL
    celery_broker_url: str | None = None
    #: RELAYLINE_AGENT, ``module:factory`` of the default agent
    agent: str = "relayline.demo:build"
    #: RELAYLINE_AGENTS, further agents by id: ``id=module:factory,...``
    agents: Mapping[str, str] = dataclasses.field(default_factory=dict)
    #: RELAYLINE_AUTH, one of AUTH_MODES (an application's ``current_user`` overrides it)
    auth: str = "none"
    jwt: JWTSettings = dataclasses.field(default_factory=JWTSettings)
    #: SECRET_KEY, signs bearer tokens (``relayline token``); at least 32 characters
    #: with RELAYLINE_AUTH=token
    secret_key: str = DEV_SECRET_KEY
    #: RELAYLINE_TOKEN_TTL, seconds a token minted by ``relayline token`` stays valid
    token_ttl: float = DEFAULT_TOKEN_TTL
    #: RELAYLINE_DELIVERY, where output goes by default: one of DELIVERIES
    delivery: str = "relay"
    #: RELAYLINE_PUBLIC_URL, the origin browsers reach this server at, without a trailing
    #: slash (Mercure topics are URLs under it)
    public_url: str = "http://127.0.0.1:8000"
    #: RELAYLINE_CORS_ORIGINS, comma-separated ``scheme://host[:port]``: the other origins
    #: a browser may call relayline from. Their pages get CORS answers (web.cors), and their
    #: cookie-authenticated requests may change state (web.cross_site). Empty: none.
    cors_origins: tuple[str, ...] = ()
    #: PORT, the TCP port ``relayline web`` and ``relayline up`` listen on by default
    port: int = 8000
    pusher: PusherSettings = dataclasses.field(default_factory=PusherSettings)
    mercure: MercureSettings = dataclasses.field(default_factory=MercureSettings)
    #: RELAYLINE_RELAY_TIMEOUT, seconds a relayed response waits for the worker's next
    #: event before it gives up
    relay_timeout: float = 300.0
    #: RELAYLINE_QUEUED_NOTICE_SECONDS, seconds a relayed turn waits for a worker to
    #: take it before its response starts with a ``queued`` status (web.waiting)
    queued_notice_seconds: float = 2.0
    #: RELAYLINE_NO_WORKER_SECONDS, seconds a relayed turn waits for a worker at most
    #: (RELAYLINE_RELAY_TIMEOUT when that is shorter): then it is withdrawn (never run)
    #: and the client gets a ``no_worker`` error
    no_worker_seconds: float = 60.0
    #: RELAYLINE_RELAY_DIRECT (default on; 0, false or off turns it off): under
    #: gunicorn's gevent worker the log reader writes a relayed response's frames
    #: straight to its socket once its headers are out (web.direct); off, every frame
    #: goes through the WSGI chain, for a WSGI middleware that must see the body
    relay_direct: bool = True
    #: RELAYLINE_CLIENT_BUFFER_BYTES, bytes of a relayed response that may wait unsent
    #: for a client that does not read (queued for it, or taken and not yet written);
    #: past it the client is dropped, and resumes with Last-Event-ID where it was
    client_buffer_bytes: int = 4 * 1024 * 1024
    #: RELAYLINE_HEARTBEAT_TTL, seconds a worker's heartbeat on a run it executes lives
    #: unrenewed: a run whose heartbeat lapsed is recovered by another worker
    heartbeat_ttl: float = 15.0
    #: RELAYLINE_HEARTBEAT_INTERVAL, seconds between heartbeat renewals, and between the
    #: sweeps that look for lapsed heartbeats
    heartbeat_interval: float = 5.0
    #: RELAYLINE_MAX_QUEUED_TURNS, turns sent to the broker and not yet started by a
    #: worker beyond which a new turn is refused with 429 (0: no limit, the default)
    max_queued_turns: int = 0
    #: RELAYLINE_MAX_QUEUED_TURNS_PER_OWNER, the same limit for each owner (0: none)
    max_queued_turns_per_owner: int = 0
    #: RELAYLINE_STREAM_RETENTION, seconds a segment's log is kept after its terminal
    stream_retention: float = 600.0
    #: RELAYLINE_STREAM_MAX_AGE, seconds a segment's log is kept at most, terminal or not
    #: (longer than the task time limit, so a running segment is never cut)
    stream_max_age: float = 3600.0
    #: RELAYLINE_STREAM_MAX_EVENTS, entries a segment's log keeps at most (about: Redis
    #: trims whole nodes)
    stream_max_events: int = 50_000
    #: RELAYLINE_LOG_LINGER_MS (milliseconds; seconds here): an envelope this long after
    #: the last log write is written at once; a sooner one joins the next group write
    log_linger: float = 0.005
    #: RELAYLINE_QUEUE, the Celery queue relayline's tasks are sent to (None: Celery's
    #: default queue), so that turns can run on dedicated workers
    queue: str | None = None
    #: RELAYLINE_LOG_FORMAT, one of LOG_FORMATS: how the run log lines are written
    log_format: str = "text"
    #: OTEL_EXPORTER_OTLP_ENDPOINT: spans are exported there over OTLP/HTTP (the SDK reads
    #: the other OTEL_* variables itself); RELAYLINE_TRACING=1 traces into a tracer
    #: provider the application configured (shared.telemetry)
    otlp_endpoint: str | None = None
    #: RELAYLINE_METRICS=1 serves Prometheus metrics at /metrics (off by default: they
    #: tell anyone who can reach them how busy the service is)
    metrics: bool = False
    #: RELAYLINE_METRICS_PORT: a worker serves its metrics on 127.0.0.1 at this port
    metrics_port: int | None = None
    #: RELAYLINE_TRACING=1 traces into a tracer provider the application configured (on
    #: whenever OTEL_EXPORTER_OTLP_ENDPOINT is set)
    tracing: bool = False
    #: OTEL_SERVICE_NAME, the service name of the traces; unset: relayline-web or
    #: relayline-worker
    service_name: str | None = None
    #: RELAYLINE_WORKER_POOL, the Celery pool of ``relayline worker``: one of WORKER_POOLS
    worker_pool: str = "gevent"
    #: RELAYLINE_WORKER_CONCURRENCY, turns one worker process runs at once (gevent:
    #: greenlets; threads: threads; prefork: child processes). The broker's connection
    #: pool follows it, the store's up to worker.resources.MAX_POOL_SIZE.
    worker_concurrency: int = 64
    #: RELAYLINE_WEB_INTAKE_SLOTS, requests of one web process at once doing the work
    #: before a POST's response starts (web.intake); the rest wait in arrival order
    web_intake_slots: int = 16
    #: OPENAI_API_KEY, for agents that use OpenAIProvider.from_settings
    openai_api_key: str | None = None
    #: OPENAI_BASE_URL, an OpenAI-compatible chat completions API
    openai_base_url: str = "https://api.openai.com/v1"
    #: RELAYLINE_MODEL, the model the default agent uses: ``<provider>:<model>`` (a
    #: pydantic-ai model name, e.g. ``anthropic:claude-sonnet-5-5``) selects
    #: PydanticAIProvider; OpenAIProvider.from_settings takes a bare name
    model: str | None = None
    #: the values of MODEL_KEY_VARIABLES that are set: pydantic-ai reads the keys itself,
    #: relayline only keeps these out of error messages
    model_api_keys: tuple[str, ...] = dataclasses.field(default=(), repr=False)

    def __post_init__(self) -> None:
        if not 0 < self.heartbeat_interval < self.heartbeat_ttl:
            raise ValueError(
                "RELAYLINE_HEARTBEAT_INTERVAL must be positive and shorter than "
                "RELAYLINE_HEARTBEAT_TTL, or a living worker's heartbeat lapses."
            )
        if self.auth == "token" and self.secret_key == DEV_SECRET_KEY:
            raise ValueError(
                "RELAYLINE_AUTH=token needs SECRET_KEY: with the built-in development "
                "secret anyone could mint a token for any user."
            )
        if self.auth == "token" and len(self.secret_key) < MIN_SECRET_LENGTH:
            raise ValueError(
                f"RELAYLINE_AUTH=token needs a SECRET_KEY of at least {MIN_SECRET_LENGTH} "
                "characters: a shorter one can be guessed from any token (for example "
                "python -c 'import secrets; print(secrets.token_urlsafe(32))')."
            )
        if self.auth == "jwt" and (problem := self.jwt.problem()) is not None:
            raise ValueError(problem)
        if (problem := self.mercure.problem()) is not None:
            raise ValueError(problem)
        if not 0 < self.queued_notice_seconds < self.no_worker_seconds:
            raise ValueError(
                "RELAYLINE_QUEUED_NOTICE_SECONDS must be positive and shorter than "
                f"RELAYLINE_NO_WORKER_SECONDS (got {self.queued_notice_seconds:g} and "
                f"{self.no_worker_seconds:g}): a turn is said to be queued before it is "
                "withdrawn."
            )
        if self.token_ttl <= 0:
            raise ValueError("RELAYLINE_TOKEN_TTL must be a positive number of seconds.")
        if self.worker_pool not in WORKER_POOLS:
            raise ValueError(
                f"RELAYLINE_WORKER_POOL must be one of {WORKER_POOLS}, got {self.worker_pool!r}."
            )
        if not 1 <= self.worker_concurrency <= MAX_WORKER_CONCURRENCY:
            raise ValueError(
                f"RELAYLINE_WORKER_CONCURRENCY must be between 1 and {MAX_WORKER_CONCURRENCY}, "
                f"got {self.worker_concurrency}."
            )

        if not 1 <= self.web_intake_slots <= MAX_WORKER_CONCURRENCY:
            raise ValueError(
                f"RELAYLINE_WEB_INTAKE_SLOTS must be between 1 and {MAX_WORKER_CONCURRENCY}, "
                f"got {self.web_intake_slots}."
            )

    @property
    def broker_url(self) -> str | None:
        return self.celery_broker_url or self.redis_url

    @classmethod
    def from_config(
        cls, config: Mapping[str, object], environ: Mapping[str, str] | None = None
    ) -> Settings:
        """The environment overlaid with an application's config (a Flask ``app.config``):
        its ``RELAYLINE_*`` keys by their variable names, and the platform variables as
        ``RELAYLINE_<name>`` (``RELAYLINE_DATABASE_URL``), so the host's own
        ``SECRET_KEY`` or ``DATABASE_URL`` is never taken for relayline's."""
        overlay: dict[str, str] = {}
        for key, value in config.items():
            if not key.startswith("RELAYLINE_") or value is None:
                continue
            bare = key.removeprefix("RELAYLINE_")
            name = bare if bare in PLATFORM_NAMES else key
            if isinstance(value, list | tuple):
                value = ",".join(str(item) for item in value)
            overlay[name] = str(value)
        return cls.from_env({**(os.environ if environ is None else environ), **overlay})

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ

        def get(name: str) -> str | None:
            value = env.get(name)
            return value if value not in (None, "") else None

        auth = get("RELAYLINE_AUTH") or "none"
        if auth not in AUTH_MODES:
            raise ValueError(f"RELAYLINE_AUTH must be one of {AUTH_MODES}, got {auth!r}.")
        log_format = get("RELAYLINE_LOG_FORMAT") or "text"
        if log_format not in LOG_FORMATS:
            raise ValueError(
                f"RELAYLINE_LOG_FORMAT must be one of {LOG_FORMATS}, got {log_format!r}."
            )
        delivery = get("RELAYLINE_DELIVERY") or "relay"
        if delivery not in DELIVERIES:
            raise ValueError(f"RELAYLINE_DELIVERY must be one of {DELIVERIES}, got {delivery!r}.")
        pusher_port = _number(get("PUSHER_PORT"), "PUSHER_PORT", int)
        port = _number(get("PORT"), "PORT", int)
        timeout = _number(get("RELAYLINE_RELAY_TIMEOUT"), "RELAYLINE_RELAY_TIMEOUT", float)
        retention = _number(get("RELAYLINE_STREAM_RETENTION"), "RELAYLINE_STREAM_RETENTION", float)
        max_age = _number(get("RELAYLINE_STREAM_MAX_AGE"), "RELAYLINE_STREAM_MAX_AGE", float)
        max_events = _number(get("RELAYLINE_STREAM_MAX_EVENTS"), "RELAYLINE_STREAM_MAX_EVENTS", int)
        linger = _number(get("RELAYLINE_LOG_LINGER_MS"), "RELAYLINE_LOG_LINGER_MS", float)
        ttl = _number(get("RELAYLINE_HEARTBEAT_TTL"), "RELAYLINE_HEARTBEAT_TTL", float)
        beat = _number(get("RELAYLINE_HEARTBEAT_INTERVAL"), "RELAYLINE_HEARTBEAT_INTERVAL", float)
        token_ttl = _number(get("RELAYLINE_TOKEN_TTL"), "RELAYLINE_TOKEN_TTL", float)
        notice = _number(
            get("RELAYLINE_QUEUED_NOTICE_SECONDS"), "RELAYLINE_QUEUED_NOTICE_SECONDS", float
        )
        no_worker = _number(
            get("RELAYLINE_NO_WORKER_SECONDS"), "RELAYLINE_NO_WORKER_SECONDS", float
        )
        concurrency = _number(
            get("RELAYLINE_WORKER_CONCURRENCY"), "RELAYLINE_WORKER_CONCURRENCY", int
        )
        slots = _number(get("RELAYLINE_WEB_INTAKE_SLOTS"), "RELAYLINE_WEB_INTAKE_SLOTS", int)
        buffer = _number(get("RELAYLINE_CLIENT_BUFFER_BYTES"), "RELAYLINE_CLIENT_BUFFER_BYTES", int)
        metrics_port = get("RELAYLINE_METRICS_PORT")
        if metrics_port is not None and not metrics_port.isdigit():
            raise ValueError("RELAYLINE_METRICS_PORT must be a port number.")
        return cls(
            max_queued_turns=_limit(env, "RELAYLINE_MAX_QUEUED_TURNS"),
            max_queued_turns_per_owner=_limit(env, "RELAYLINE_MAX_QUEUED_TURNS_PER_OWNER"),
            database_url=with_driver(get("DATABASE_URL") or cls.database_url),
            redis_url=get("REDIS_URL"),
            celery_broker_url=get("CELERY_BROKER_URL"),
            agent=get("RELAYLINE_AGENT") or cls.agent,
            agents=_parse_agents(get("RELAYLINE_AGENTS") or ""),
            auth=auth,
            jwt=JWTSettings(
                secret=get("RELAYLINE_JWT_SECRET"),
                jwks_url=get("RELAYLINE_JWKS_URL"),
                audience=get("RELAYLINE_JWT_AUDIENCE"),
                issuer=get("RELAYLINE_JWT_ISSUER"),
                algorithms=tuple(
                    a.strip()
                    for a in (get("RELAYLINE_JWT_ALGORITHMS") or "").split(",")
                    if a.strip()
                ),
                user_claim=get("RELAYLINE_JWT_USER_CLAIM") or "sub",
            ),
            queue=get("RELAYLINE_QUEUE"),
            log_format=log_format,
            otlp_endpoint=get("OTEL_EXPORTER_OTLP_ENDPOINT"),
            metrics=(get("RELAYLINE_METRICS") or "").lower() in ("1", "true", "on"),
            metrics_port=int(metrics_port) if metrics_port is not None else None,
            tracing=bool(get("OTEL_EXPORTER_OTLP_ENDPOINT"))
            or (get("RELAYLINE_TRACING") or "").lower() in ("1", "true", "on"),
            service_name=get("OTEL_SERVICE_NAME"),
            secret_key=get("SECRET_KEY") or cls.secret_key,
            token_ttl=float(token_ttl) if token_ttl is not None else cls.token_ttl,
            delivery=delivery,
            public_url=(get("RELAYLINE_PUBLIC_URL") or cls.public_url).rstrip("/"),
            cors_origins=parse_origins(get("RELAYLINE_CORS_ORIGINS") or ""),
            port=int(port) if port is not None else cls.port,
            pusher=PusherSettings(
                app_id=get("PUSHER_APP_ID"),
                key=get("PUSHER_KEY"),
                secret=get("PUSHER_SECRET"),
                host=get("PUSHER_HOST"),
                port=int(pusher_port) if pusher_port is not None else None,
                encryption_master_key_base64=get("PUSHER_ENCRYPTION_MASTER_KEY_BASE64"),
            ),
            mercure=MercureSettings(
                hub_url=get("MERCURE_HUB_URL"),
                publisher_jwt_key=get("MERCURE_PUBLISHER_JWT_KEY"),
                subscriber_jwt_key=get("MERCURE_SUBSCRIBER_JWT_KEY"),
            ),
            relay_timeout=float(timeout) if timeout is not None else cls.relay_timeout,
            queued_notice_seconds=(
                float(notice) if notice is not None else cls.queued_notice_seconds
            ),
            no_worker_seconds=float(no_worker) if no_worker is not None else cls.no_worker_seconds,
            relay_direct=(get("RELAYLINE_RELAY_DIRECT") or "on").lower()
            not in ("0", "false", "off"),
            client_buffer_bytes=int(buffer) if buffer is not None else cls.client_buffer_bytes,
            stream_retention=float(retention) if retention is not None else cls.stream_retention,
            stream_max_age=float(max_age) if max_age is not None else cls.stream_max_age,
            stream_max_events=(
                int(max_events) if max_events is not None else cls.stream_max_events
            ),
            log_linger=float(linger) / 1000 if linger is not None else cls.log_linger,
            heartbeat_ttl=float(ttl) if ttl is not None else cls.heartbeat_ttl,
            heartbeat_interval=float(beat) if beat is not None else cls.heartbeat_interval,
            worker_pool=get("RELAYLINE_WORKER_POOL") or cls.worker_pool,
            worker_concurrency=(
                int(concurrency) if concurrency is not None else cls.worker_concurrency
            ),
            web_intake_slots=(int(slots) if slots is not None else cls.web_intake_slots),
            openai_api_key=get("OPENAI_API_KEY"),
            openai_base_url=get("OPENAI_BASE_URL") or cls.openai_base_url,
            model=get("RELAYLINE_MODEL"),
            model_api_keys=tuple(
                value for name in MODEL_KEY_VARIABLES if (value := get(name)) is not None
            ),
        )


def child_environment(
    defaults: Mapping[str, str] | None = None, overrides: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment for a child process: this process's own, over ``defaults`` (for
    variables it does not set) and under ``overrides``."""
    return {**(defaults or {}), **os.environ, **(overrides or {})}


def _number(value: str | None, name: str, kind: type[int] | type[float]) -> float | None:
    if value is None:
        return None
    try:
        number = kind(value)
    except ValueError:
        raise ValueError(f"{name} must be a {kind.__name__}, got {value!r}.") from None
    if number <= 0:
        raise ValueError(f"{name} must be positive, got {value!r}.")
    return number


def _limit(env: Mapping[str, str], name: str) -> int:
    """A count where 0 (or unset) means no limit."""
    value = env.get(name) or ""
    if not value:
        return 0
    if not value.strip().isdigit():
        raise ValueError(f"{name} must be a whole number (0: no limit), got {value!r}.")
    return int(value)


def _parse_agents(value: str) -> dict[str, str]:
    agents: dict[str, str] = {}
    for entry in filter(None, (part.strip() for part in value.split(","))):
        name, sep, target = (part.strip() for part in entry.partition("="))
        module, colon, factory = target.partition(":")
        if not sep or not name or not colon or not module.strip() or not factory.strip():
            raise ValueError(
                f"RELAYLINE_AGENTS entries look like id=module:factory, got {entry!r}."
            )
        if name in agents:
            raise ValueError(f"RELAYLINE_AGENTS names agent {name!r} more than once.")
        agents[name] = target
    return agents
