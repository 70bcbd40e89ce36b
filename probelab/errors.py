"""Exit codes and the errors that carry them: the CLI maps each error to its code."""

from enum import IntEnum


class Exit(IntEnum):
    OK = 0  # confirmed, or the command did what it was asked
    REFUTED = 1  # a hypothesis does not fit the data (a result, not a failure)
    USAGE = 2  # bad arguments or input files
    INTEGRITY = 3  # tampered, post-hoc, broken ledger, failed evidence or device checks
    NO_DEVICE = 4  # no suitable device or toolchain on this machine


class LabError(Exception):
    code: Exit = Exit.USAGE


class UsageError(LabError):
    code = Exit.USAGE


class CannotWrite(UsageError):
    """A file could not be written (read-only folder, full disk); nothing was left behind."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the process is so that every cleanup runs on the way out."""


class IntegrityError(LabError):
    code = Exit.INTEGRITY


class HistoryError(IntegrityError):
    """The checkout's git history cannot vouch for order at all (shallow clone, grafts):
    one plain error for the whole command, not one problem per seal."""


class KernelTimeout(IntegrityError):
    """A launch did not finish in time. Its work may still run on the device, so the
    process must not wait for it on the way out (the CLI exits without teardown)."""


class Unavailable(LabError):
    """A backend, device or toolchain is missing; the message says how to get it."""

    code = Exit.NO_DEVICE
