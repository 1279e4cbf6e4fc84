"""Stand-in for aws_embedded_metrics.logger (see ../__init__.py)."""
