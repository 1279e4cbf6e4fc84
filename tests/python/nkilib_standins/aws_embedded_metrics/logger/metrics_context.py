"""Stand-in for aws_embedded_metrics.logger.metrics_context.MetricsContext:
holds the metrics, dimensions and properties a test records, in memory."""


class MetricsContext:
    """The metrics of one test: name -> list of (value, unit)."""

    def __init__(self):
        self.namespace = "aws-embedded-metrics"   # CloudWatch namespace (unused here)
        self.metrics = {}                         # metric name -> [(value, unit)]
        self.dimensions = []                      # list of dimension dicts
        self.properties = {}                      # property name -> value

    @classmethod
    def empty(cls):
        return cls()

    def put_metric(self, name, value, unit=None, storage_resolution=60):
        self.metrics.setdefault(name, []).append((value, unit))

    def set_dimensions(self, dimensions, use_default=False):
        self.dimensions = list(dimensions)

    def put_dimensions(self, dimensions):
        self.dimensions.append(dimensions)

    def set_property(self, key, value):
        self.properties[key] = value
