"""How logtide is packaged (issue #25, "Packaging"): a pure-Python wheel with its licence, ``py.typed`` and the
version defined once; the extras; the CQL server offering only the compression codecs that are installed; and
logtide working with scylla-driver's ``cassandra`` package in place of cassandra-driver's."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import venv
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from cassandra.protocol import OptionsMessage, SupportedMessage

from logtide.version import __version__

from .ops.serving import ServeProcess
from .server.rawclient import RawClient
from .without import logtide_without

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    """The wheel ``pip wheel .`` builds from this checkout (no build isolation: setuptools is in the test extra)."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out),
                    str(ROOT)], check=True, capture_output=True, timeout=600)
    (built,) = out.glob("logtide-*.whl")
    return zipfile.ZipFile(built)


def test_the_wheel_is_pure_python_with_every_subpackage_its_licence_and_py_typed(wheel):
    names = wheel.namelist()
    assert Path(wheel.filename).name == f"logtide-{__version__}-py3-none-any.whl"  # nothing compiled at install
    assert not [n for n in names if n.endswith((".so", ".pyd", ".c"))]
    sources = {str(p.relative_to(ROOT)) for p in (ROOT / "logtide").rglob("*.py")}
    assert sources <= set(names), sorted(sources - set(names))  # logtide/cdc has no __init__.py and is there too
    assert {"logtide/py.typed", "logtide/spark/log4j2.properties",
            f"logtide-{__version__}.dist-info/licenses/LICENSE"} <= set(names)


def test_the_metadata_has_one_version_the_licence_and_the_extras(wheel):
    meta = wheel.read(f"logtide-{__version__}.dist-info/METADATA").decode()
    fields = [line.partition(": ") for line in meta.splitlines() if ": " in line]
    values = lambda key: [v for k, _, v in fields if k == key]  # noqa: E731
    assert values("Version") == [__version__] == [metadata.version("logtide")]
    assert values("License-Expression") == ["Apache-2.0"]
    assert "Typing :: Typed" in values("Classifier")
    assert set(values("Provides-Extra")) == {"compression", "compile", "spark", "lakehouse", "udf", "test", "bench"}
    requires = values("Requires-Dist")
    assert "google-crc32c>=1.5" in requires and not [r for r in requires if r.startswith("crc32c")]  # LGPL
    assert 'lz4>=4; extra == "compression"' in requires and 'python-snappy>=0.7; extra == "compression"' in requires
    assert 'lupa>=2.0; extra == "udf"' in requires
    assert 'pyspark<4.4,>=4.0; extra == "spark"' in requires and 'deltalake>=1.0; extra == "lakehouse"' in requires
    assert (ROOT / "LICENSE").read_text().split()[:3] == ["Apache", "License", "Version"]


def test_logtide_version_is_the_package_version():
    done = subprocess.run([sys.executable, "-m", "logtide", "--version"], capture_output=True, text=True, timeout=60)
    assert done.stdout == f"logtide {__version__}\n"


@pytest.mark.parametrize("installed", [True, False], ids=["with the compression extra", "without it"])
def test_the_cql_server_offers_only_the_compression_it_has(tmp_path, installed):
    hidden = logtide_without("lz4", "snappy")  # as on an install without the compression extra
    prefix = [sys.executable, "-m", "logtide"] if installed else [sys.executable, "-c", hidden]
    with ServeProcess([*prefix, "serve", "--data-dir", str(tmp_path), "--port", "0", "--kafka-port", "off",
                       "--metrics-port", "off"]) as srv:
        port = srv.wait_listening()
        with RawClient(port) as c:
            reply = c.request(OptionsMessage())
        assert isinstance(reply, SupportedMessage)
        assert reply.options["COMPRESSION"] == (["lz4", "snappy"] if installed else [])
        assert srv.stop() == 0


# -- scylla-driver in place of cassandra-driver ---------------------------------------------------------------

ROUND_TRIP = textwrap.dedent("""
    import sys
    from importlib import metadata
    import cassandra
    from cassandra.cluster import Cluster
    print("driver", metadata.version("scylla-driver"), cassandra.__file__)
    cluster = Cluster(["127.0.0.1"], port=int(sys.argv[1]), connect_timeout=10)
    s = cluster.connect()
    s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v text) WITH cdc = {'enabled': true}")
    s.execute(s.prepare("INSERT INTO ks.t (k, v) VALUES (?, ?)"), (1, "one"))
    print("row", list(s.execute("SELECT k, v FROM ks.t")))
    print("log", [(r.k, r.v) for r in s.execute('SELECT k, v FROM ks.t_scylla_cdc_log')])
    cluster.shutdown()
""")


@pytest.fixture(scope="module")
def scylla_driver_venv(tmp_path_factory) -> Path:
    """A virtualenv, made once per run, that sees this one's packages but has scylla-driver's ``cassandra`` first
    on its path (as ``pip install scylla-driver`` after logtide leaves it); skipped when PyPI cannot be reached."""
    import site
    import sysconfig

    home = tmp_path_factory.mktemp("scylla-driver") / "venv"
    venv.create(home, with_pip=False)
    python = home / "bin" / "python"
    own = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True).stdout.strip())
    (own / "logtide-test-base.pth").write_text("\n".join([sysconfig.get_paths()["purelib"], *site.getsitepackages(),
                                                          str(ROOT)]) + "\n")
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(own),
                           "scylla-driver"], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        pytest.skip(f"scylla-driver could not be installed from the package index: {done.stderr.strip()[-300:]}")
    return python


@pytest.mark.network
def test_logtide_serves_and_runs_with_scylla_driver_in_place_of_cassandra_driver(tmp_path, scylla_driver_venv):
    python = str(scylla_driver_venv)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with ServeProcess([python, "-m", "logtide", "serve", "--data-dir", str(tmp_path), "--port", "0", "--kafka-port",
                       "off", "--metrics-port", "off", "--synchronous", "OFF"], env=env) as srv:
        port = srv.wait_listening()
        done = subprocess.run([python, "-c", ROUND_TRIP, str(port)], capture_output=True, text=True, timeout=300,
                              env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        driver, row, log = done.stdout.splitlines()
        assert driver.startswith("driver ") and str(scylla_driver_venv.parent.parent) in driver  # ScyllaDB's package
        assert row == "row [Row(k=1, v='one')]" and log == "log [(1, 'one')]"
        assert srv.stop() == 0, srv.output()
    code = "import cassandra, logtide.schema.types_codec; print(cassandra.__file__)"
    served_with = subprocess.run([python, "-c", code],
                                 capture_output=True, text=True, env=env)
    assert str(scylla_driver_venv.parent.parent) in served_with.stdout, served_with.stderr
