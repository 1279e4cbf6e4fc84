"""Stand-in for the NKI Library's test/utils/scripts/remote_lock_scripts.py,
which the public repository lacks: the helpers that lock NeuronCores on a
remote Trainium host. run_nkilib.py copies this file into its temporary
copy of the suite when the module is missing there. The suite imports it
at start-up for LockStatus and LockResult, and uses them only with remote
hosts, which trnemu never uses; the values are trnemu's own."""
import enum
import json
from dataclasses import dataclass, field


class LockStatus(enum.Enum):
    """Outcome of a core-lock command, with the exit code that reports it."""

    ALLOCATED = 0
    RELEASED = 1
    DRAINED = 2
    UNDRAINED = 3
    NO_CORES = 4
    DRAINING = 5
    FLOCK_TIMEOUT = 6
    ERROR = 7

    @property
    def exit_code(self):
        return self.value

    @classmethod
    def from_exit_code(cls, rc):
        for s in cls:
            if s.value == rc:
                return s
        return cls.ERROR


@dataclass
class LockResult:
    """What a core-lock command did."""

    status: LockStatus                                # the outcome
    cores: list = field(default_factory=list)         # cores allocated
    max_lock_expiry: float = 0.0                      # latest lock expiry when draining
    message: str = ""                                 # why, on an error

    @classmethod
    def from_json(cls, text):
        d = json.loads(text)
        return cls(status=LockStatus[d.get("status", "ERROR")], cores=list(d.get("cores", [])),
                   max_lock_expiry=float(d.get("max_lock_expiry", 0.0)), message=d.get("message", ""))
