"""Serving: the HTTP app, answer telemetry, and corpus-gap clustering."""
