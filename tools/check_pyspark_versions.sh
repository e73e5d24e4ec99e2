#!/bin/sh
# Run logtide's Spark source tests under each PySpark release it supports (docs/spark.md "Spark versions").
#
#   tools/check_pyspark_versions.sh [VERSION ...]     default: 4.0 4.1 4.2 4.3
#
# Each VERSION (a release line such as 4.1) gets a throwaway venv outside the repository with
# `pip install 'pyspark==VERSION.*' -e '.[test]'`, then runs the table, CDC, changefeed and TLS/auth source
# tests in it.  Needs python3, Java 17+ and the package index; takes a few minutes per version.
# Exits 1 when any version failed; the venvs are removed at the end.
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
versions=${*:-4.0 4.1 4.2 4.3}
work=$(mktemp -d "${TMPDIR:-/tmp}/logtide-pyspark.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
failed=""
for v in $versions; do
    venv="$work/pyspark-$v"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q "pyspark==$v.*" -e "$repo[test]"
    echo "== PySpark $("$venv/bin/python" -c 'import pyspark; print(pyspark.__version__)')"
    if ! (cd "$repo" && "$venv/bin/python" -m pytest -q tests/spark/test_table_source.py \
            tests/spark/test_cdc_source.py tests/spark/test_changefeed_source.py tests/spark/test_secured_sources.py); then
        failed="$failed $v"
    fi
done
if [ -n "$failed" ]; then
    echo "failed on PySpark$failed" >&2
    exit 1
fi
echo "passed on PySpark $versions"
