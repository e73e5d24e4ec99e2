"""Changefeed topics over the Kafka protocol (docs/kafka.md): a broker for Kafka consumers.

``KafkaBroker`` serves a ``logtide.changefeed.api.TopicReader``; messages are
encoded from schema tables (``messages``) with record batch v2 (``records``).
"""

from .broker import BackgroundKafka, KafkaBroker, KafkaConfig

__all__ = ["BackgroundKafka", "KafkaBroker", "KafkaConfig"]
