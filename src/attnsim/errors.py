"""Errors a user can act on: each message names the problem in one line."""


class AttnsimError(Exception):
    """Base class; the CLI prints these as one line and exits with status 2."""


class ConfigError(AttnsimError):
    """The configuration is invalid; the message starts with the offending key."""


class StoreError(AttnsimError):
    """The result store is missing, foreign, truncated or inconsistent with the config."""


class WriteError(AttnsimError):
    """A file could not be written: a full disk or quota, a read-only folder, no permission."""


class QueryError(AttnsimError):
    """A query could not be run (unknown table, bad SQL, no results yet)."""


class AssetError(AttnsimError):
    """A pinned data asset (model weights, vectors) is unknown, unreachable or fails its sha256."""


class KernelOutputError(AttnsimError):
    """A kind's kernel returned something other than what the kind declares (shape, dtype, NaN)."""
