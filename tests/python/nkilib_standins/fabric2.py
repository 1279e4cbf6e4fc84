"""Stand-in for fabric2, the old name of Fabric 2 (SSH to remote hosts):
Debian packages Fabric 2 as `fabric`, re-exported here when installed. The
NKI Library suite needs it only for remote hosts, which trnemu never uses."""
try:
    from fabric import Config, Connection, Result  # noqa: F401
except ImportError:
    class Connection:
        """Fabric is not installed: remote hosts cannot be reached."""

        def __init__(self, *args, **kwargs):
            raise RuntimeError("fabric2 stand-in: install python3-fabric to reach remote hosts")

    class Result:
        """The result of a remote command (never produced without Fabric)."""

    class Config:
        """Fabric's configuration (never used without Fabric)."""
