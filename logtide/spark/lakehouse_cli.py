"""``logtide pipeline lakehouse``: a changefeed into a Delta replica or a parquet change table (docs/spark.md).

One idea split for size with ``pipeline_cli.py``: the ``logtide pipeline`` command line (its lakehouse
job here).
"""

from __future__ import annotations

import argparse
import os
from typing import Any


def add_lakehouse(jobs: "argparse._SubParsersAction") -> None:
    """Register the ``lakehouse`` job under ``logtide pipeline``."""
    p = jobs.add_parser(
        "lakehouse", help="stream a changefeed into a Delta table (a replica) or parquet files (a change table)",
        description="Stream a changefeed topic, read with the logtide-changefeed source, into --target: with "
                    "--format delta a replica of the changefeed's table (one MERGE by primary key per micro-batch, "
                    "each recorded in the table as an idempotent transaction, the table's change data feed on); "
                    "with --format parquet an append-only change table partitioned by commit_date. Checkpointed "
                    "in --checkpoint: run it again to resume.")
    p.add_argument("--source", required=True, metavar="URL",
                   help="kafka://[USER:PASSWORD@]HOST:PORT[,HOST:PORT...]/KEYSPACE/TABLE/CHANGEFEED, or "
                        "KEYSPACE/TABLE/CHANGEFEED with --data-dir")
    p.add_argument("--data-dir", metavar="DIR", help="read the topic from this local logtide data directory")
    p.add_argument("--target", required=True, metavar="DIR", help="the Delta table or parquet directory")
    p.add_argument("--format", required=True, choices=("delta", "parquet"), help="delta (a replica) or parquet")
    p.add_argument("--checkpoint", metavar="DIR", help="directory for the job's progress (default TARGET/_checkpoint)")
    p.add_argument("--until-caught-up", action="store_true",
                   help="stop once every record present at the start is in the target")
    p.add_argument("--trigger-interval", default="10 seconds", metavar="DURATION",
                   help="time between micro-batches (default '10 seconds')")
    p.add_argument("--max-records-per-trigger", type=int, metavar="N", help="at most N records per micro-batch")
    p.add_argument("--starting-offsets", metavar="WHERE",
                   help='earliest (default), latest or JSON {"PARTITION": OFFSET, ...}')
    p.add_argument("--consistent", action="store_true",
                   help="barrier-consistent micro-batches (changefeeds with BARRIERS_INTERVAL)")
    p.add_argument("--consumer", metavar="NAME", help="commit the offsets of each finished micro-batch to this consumer")
    p.add_argument("--cql-port", type=int, metavar="PORT",
                   help="CQL port of the Kafka host, where the table's schema is read (default 9042)")
    p.add_argument("--ssl-ca-file", metavar="PEM", help="TLS to the Kafka endpoint, trusting this CA bundle")
    p.add_argument("--option", "-o", action="append", default=[], metavar="KEY=VALUE",
                   help="any other logtide-changefeed source option (repeatable)")
    p.add_argument("--command-config", metavar="FILE",
                   help="a Kafka client properties file, as Kafka's tools take it (security.protocol, sasl.mechanism, "
                        "sasl.jaas.config, ssl.ca.location, ...); -o kafka.KEY=VALUE wins over it, and a login in the "
                        "URL, -o or LOGTIDE_KAFKA_* over its sasl.jaas.config")
    from .pipeline_cli import add_credentials_option

    add_credentials_option(p)
    p.add_argument("--master", default=os.environ.get("SPARK_MASTER", "local[2]"),
                   help="Spark master (default $SPARK_MASTER, else local[2])")
    p.set_defaults(run=run_lakehouse)


def source_extras(ns: argparse.Namespace) -> dict[str, str]:
    """The source options the command line sets beyond the topic and where it is."""
    from .options import OptionError

    opts: dict[str, str] = {}
    for kv in ns.option:
        key, eq, value = kv.partition("=")
        if not eq or not key.strip():
            raise OptionError(f"--option: expected KEY=VALUE, got {kv!r}")
        opts[key.strip()] = value
    if ns.starting_offsets:
        opts["startingOffsets"] = ns.starting_offsets
    if ns.consistent:
        opts["consistent"] = "true"
    if ns.consumer:
        opts["consumer"] = ns.consumer
    if ns.cql_port:
        opts["cqlPort"] = str(ns.cql_port)
    if ns.ssl_ca_file:
        opts.update(ssl="true", sslCaFile=ns.ssl_ca_file)
    return opts


KAFKA_CLIENT_LOGIN = ("kafka.sasl.username", "kafka.sasl.password", "kafka.sasl.jaas.config")


def command_config_options(path: str | None, extras: dict[str, str]) -> dict[str, str]:
    """The settings of the ``--command-config`` file as ``kafka.``-prefixed source options, leaving out those the
    command line gives (``-o kafka.KEY=VALUE`` wins over the file)."""
    if path is None:
        return {}
    from .kafka_config import librdkafka_settings, read_command_config

    settings = {k.lower(): v for k, v in read_command_config(path).items()}
    librdkafka_settings(settings, {k: f"--command-config {path}: {k}" for k in settings})  # its errors name the file
    given = {k.lower() for k in extras}
    return {f"kafka.{k}": v for k, v in settings.items() if f"kafka.{k}" not in given}


def lakehouse_login(source: str, extras: dict[str, str], file: str | None,
                    command_config: str | None = None) -> dict[str, str]:
    """The Kafka login options of a ``kafka://`` source (docs/spark.md "Logins"), the first of: the URL's, else
    ``-o username=``/``-o password=`` or a Kafka client login ``-o kafka.sasl.*`` (the client's own, left as it
    is), else the environment (``LOGTIDE_KAFKA_*``), else the ``--command-config`` file's ``sasl.jaas.config``,
    else the credentials file and the prompt.  The file's other settings (``security.protocol``,
    ``sasl.mechanism``, ``ssl.*``) apply whichever login wins; its login is dropped when another wins."""
    import sys

    from .credentials import VARIABLES, url_password_warning
    from .kafka_config import LOGIN_KEYS
    from .lakehouse_job import kafka_url_login
    from .pipeline_cli import job_login

    given = {k.lower(): k for k in extras}
    from_file = command_config_options(command_config, extras)
    file_login = {k: v for k, v in from_file.items() if k.lower()[len("kafka."):] in LOGIN_KEYS}
    settings = {k: v for k, v in from_file.items() if k not in file_login}
    if any(k in given for k in KAFKA_CLIENT_LOGIN):
        if "kafka.sasl.password" in given or "kafka.sasl.jaas.config" in given:
            option = "-o " + given.get("kafka.sasl.password", given.get("kafka.sasl.jaas.config", ""))
            print(url_password_warning("logtide pipeline lakehouse", option, "kafka"), file=sys.stderr)
        return settings
    username, password = kafka_url_login(source)
    option = "--source"
    typed_user = extras.pop(given["username"]) if "username" in given else None
    typed_password = extras.pop(given["password"]) if "password" in given else None
    if username is None and typed_user is not None:
        username, option = typed_user, "-o username"
    if password is None and typed_password is not None:
        password, option = typed_password, "-o password"
    if username is None and password is None and file_login and not any(os.environ.get(v) for v in VARIABLES["kafka"]):
        return {**settings, **file_login}  # the file's login, its mechanism with it (PLAIN or SCRAM)
    username, password = job_login("lakehouse", option, username, password, "kafka", file)
    return settings if username is None else {**settings, "username": username, "password": password or ""}


def run_lakehouse(ns: argparse.Namespace) -> int:
    from ..errors import CommandFailure
    from .lakehouse_job import checkpoint_of, job_options, source_options
    from .options import OptionError
    from .pipeline_cli import require_module, run_job

    try:
        source_options(ns.source, ns.data_dir)
        extras = source_extras(ns)
        if ns.data_dir is not None and ns.command_config is not None:
            raise OptionError("--command-config: a Kafka client's settings go with a kafka:// --source, not "
                              "--data-dir")
        if ns.data_dir is None:
            extras.update(lakehouse_login(ns.source, extras, ns.credentials, ns.command_config))
    except OptionError as e:
        raise CommandFailure(str(e)) from None
    except KeyboardInterrupt:
        return 130
    if ns.format == "delta":
        require_module("deltalake", "lakehouse")

    def check() -> None:
        from .preflight import check_lakehouse

        check_lakehouse(job_options(ns.source, ns.data_dir, extras, ns.max_records_per_trigger), ns.target,
                        ns.format, checkpoint_of(ns.target, ns.checkpoint))

    def start(spark: Any, say: Any) -> Any:
        from .lakehouse_job import lakehouse

        return lakehouse(spark, ns.source, ns.target, ns.format, checkpoint=ns.checkpoint,
                         until_caught_up=ns.until_caught_up, data_dir=ns.data_dir,
                         trigger_interval=ns.trigger_interval, max_records_per_trigger=ns.max_records_per_trigger,
                         options=extras, progress=say)

    def status(query: Any) -> str | None:
        from .lakehouse_job import progress_line

        return progress_line(query)

    done = f"streamed {ns.source} into {ns.target} ({ns.format})" + (" (caught up)" if ns.until_caught_up else "")
    return run_job("lakehouse", ns.master, check, start, status, done)
