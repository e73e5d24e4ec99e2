"""What the running PySpark offers logtide's sources (docs/spark.md "Spark versions").

The Python Data Source API grew between releases: 4.0 has batch and streaming readers, 4.1 adds
filter pushdown (``DataSourceReader.pushFilters``), 4.2 adds admission control and
``Trigger.AvailableNow`` for Python stream readers (``latestOffset(start, limit)``,
``getDefaultReadLimit``, ``SupportsTriggerAvailableNow``).  An option that needs a later release
than the one running is refused with a message naming both, rather than silently ignored.
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSourceStreamReader

from .options import OptionError

try:  # Spark 4.2+
    from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

    STREAM_BASES: tuple = (DataSourceStreamReader, SupportsTriggerAvailableNow)
except ImportError:  # Spark 4.0/4.1: Spark calls latestOffset() without arguments
    STREAM_BASES = (DataSourceStreamReader,)


def spark_version() -> str:
    """The running PySpark's version, e.g. ``4.1.4``."""
    import pyspark

    return pyspark.__version__


def has_admission_control() -> bool:
    """Spark 4.2+: Spark hands a stream reader its start offset and read limit (``latestOffset(start, limit)``)."""
    return len(STREAM_BASES) > 1


def has_filter_pushdown() -> bool:
    """Spark 4.1+: ``DataSourceReader.pushFilters`` and the filter classes exist."""
    try:
        from pyspark.sql.datasource import EqualTo  # noqa: F401
    except ImportError:
        return False
    return True


def require(available: bool, option: str, since: str, feature: str) -> None:
    """Refuse ``option`` when the running Spark lacks ``feature`` (added in Spark ``since``)."""
    if not available:
        raise OptionError(f"option {option}: needs Spark {since} or later ({feature}); this is PySpark "
                          f"{spark_version()}")


def check_stream_limit(option: str, value: int | None) -> None:
    """A stream's per-trigger cap (``maxRowsPerTrigger``, ``maxRecordsPerTrigger``) needs Spark 4.2+.

    Spark 4.0/4.1 call ``latestOffset()`` without the batch's start: after a restart from a
    checkpoint the reader cannot know where the next batch begins, so it cannot cap it, and under
    ``Trigger.AvailableNow`` Spark asks for one end only, so a capped end would stop the query
    early.  Refused rather than risk a batch ending before it starts."""
    if value is not None:
        require(has_admission_control(), option, "4.2", "admission control of Python streaming sources")
