"""Stand-in for aws_embedded_metrics.serializers (see ../__init__.py)."""
