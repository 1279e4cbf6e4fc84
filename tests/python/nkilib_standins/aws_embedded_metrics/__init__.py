"""Stand-in for aws_embedded_metrics (CloudWatch embedded metrics), which
Debian does not package: the NKI Library suite imports it to record test
metrics; on trnemu the records stay in memory (see ../README.md)."""
