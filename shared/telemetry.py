"""Traces with OpenTelemetry: one trace follows a turn from the HTTP request through the
broker into the worker, its model calls and its tool executions.

Off unless asked for: ``OTEL_EXPORTER_OTLP_ENDPOINT`` set (spans are exported over
OTLP/HTTP by the SDK, configured by the standard ``OTEL_*`` variables), or
``RELAYLINE_TRACING=1`` for an application that configures its own tracer provider.
Then the maintained instrumentations do the plumbing: Flask (the request span), Celery
(the task span, with the trace context carried in the task's message headers from the
web's publish to the worker) and SQLAlchemy (Redis on request: ``DEFAULT_PARTS``). The
loop adds a span per model call and per tool execution through the API alone
(``shared`` needs only ``opentelemetry-api``, a no-op without an SDK); the SDK and the
instrumentations are the ``relayline[otel]`` extra.
"""

from __future__ import annotations

import logging

from opentelemetry import trace

from relayline.shared.settings import Settings

logger = logging.getLogger("relayline.telemetry")

#: the tracer of relayline's own spans (model calls, tool executions)
tracer = trace.get_tracer("relayline")

#: what tracing instruments: not Redis, whose instrumentation makes a span of every
#: command (two per streamed event: the log's XADD and the PUBLISH), which halved the
#: events per second in bench/observability.py; ``instrument("redis")`` adds it
DEFAULT_PARTS = ("celery", "sqlalchemy")

_instrumented: set[str] = set()


def configure(settings: Settings, service_name: str) -> bool:
    """Set up tracing for this process when ``settings.tracing``; whether it is. With an
    OTLP endpoint and no tracer provider yet, installs the SDK's, exporting in batches."""
    if not settings.tracing:
        return False
    if settings.otlp_endpoint and not _has_sdk_provider():
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import SERVICE_NAME, Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError:
            logger.warning("OTEL_EXPORTER_OTLP_ENDPOINT is set; install relayline[otel]")
            return False
        name = settings.service_name or service_name
        provider = TracerProvider(resource=Resource.create({SERVICE_NAME: name}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(provider)
    return True


def _has_sdk_provider() -> bool:
    provider = trace.get_tracer_provider()
    return type(provider).__name__ not in ("ProxyTracerProvider", "NoOpTracerProvider")


def instrument(*parts: str) -> None:
    """Instrument the named libraries once per process: ``celery``, ``redis``,
    ``sqlalchemy`` (``flask`` goes per application, ``instrument_flask``)."""
    for part in parts:
        if part in _instrumented:
            continue
        try:
            if part == "celery":
                from opentelemetry.instrumentation.celery import CeleryInstrumentor

                CeleryInstrumentor().instrument()  # type: ignore[no-untyped-call]
            elif part == "redis":
                from opentelemetry.instrumentation.redis import RedisInstrumentor

                RedisInstrumentor().instrument()
            elif part == "sqlalchemy":
                from opentelemetry.instrumentation.sqlalchemy import SQLAlchemyInstrumentor

                SQLAlchemyInstrumentor().instrument()
            else:
                raise ValueError(f"Unknown instrumentation {part!r}.")
        except ImportError:
            logger.warning("tracing is on but the %s instrumentation is missing", part)
            continue
        _instrumented.add(part)
