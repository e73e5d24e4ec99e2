"""The error of a bad Spark source option (docs/spark.md "Connection options"), apart so that every module of
the options (:mod:`.options`, :mod:`.tls`) raises the same class; :mod:`.options` re-exports it."""


class OptionError(ValueError):
    """An option is missing, unknown or malformed; the message names it."""
