"""Stand-in for aws_embedded_metrics.serializers.log_serializer: nothing
is sent to CloudWatch, so a context serializes to no records."""


class LogSerializer:
    """Turns a MetricsContext into EMF JSON records: none here."""

    @staticmethod
    def serialize(context):
        return []
