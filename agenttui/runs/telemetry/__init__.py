"""Runs into the observability stack a team already has: OpenTelemetry traces by the GenAI
semantic conventions (``conventions`` pins the version), made from the journal (``spans``, pure)
and written to an OTLP JSON lines file or sent over OTLP/HTTP through the OpenTelemetry SDK
(``export``).
"""
