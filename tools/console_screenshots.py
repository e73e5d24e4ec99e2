"""Take the console screenshots of docs/console.md and measure the page weight of a first load (run by hand).

    .venv/bin/python tools/console_screenshots.py [--out docs/images]

Starts a real ``logtide serve`` on free ports in a temporary directory (the
tests' machinery: ``tests/console``), writes through cassandra-driver, lets
a kafka-python group consume part of a changefeed, and drives Debian's
headless Chromium to each main page, saving ``console-<page>.png``.  It prints
the bytes a first load of the overview transferred (the Resource Timing
API's ``transferSize`` of the page and of every file and API answer it
loaded), which docs/console.md quotes.  Never run by the test suite.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.console.browser import chromium_missing_reason, start_browser, text_of, wait_for  # noqa: E402
from tests.console.conftest import TABLE_DDL, connected, start_console  # noqa: E402

PAGES = (("overview", "/#/", "#ov-writes"), ("table", "/#/table/ks/t", "#describe"),
         ("changefeed", "/#/changefeed/ks/t/f", "#lag-billing"), ("records", "/#/records/ks/t/f", "#records .record"),
         ("log", "/#/log/ks/t", "#records .log-entry"), ("consumers", "/#/consumers", "table.grid"))

WEIGHT = """
const entries = performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'));
return entries.map(e => [e.name, e.transferSize, e.encodedBodySize, e.decodedBodySize]);
"""


def write_load(session, stop: threading.Event) -> None:
    insert = session.prepare("INSERT INTO ks.t (pk, ck, v) VALUES (?, ?, ?)")
    i = 0
    while not stop.is_set():
        session.execute(insert, [i % 50, i % 7, f"value {i}"])
        i += 1
        time.sleep(0.02 if (i // 100) % 2 else 0.05)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "images"))
    args = ap.parse_args()
    reason = chromium_missing_reason()
    if reason:
        print(f"console_screenshots: {reason}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from kafka import KafkaConsumer

    with tempfile.TemporaryDirectory() as tmp, connected(start_console(Path(tmp) / "data")) as c:
        s = c.session
        s.execute(TABLE_DDL)
        s.execute("ALTER TABLE ks.t ADD CHANGEFEED f WITH (MODE = 'NEW_AND_OLD_IMAGES', FORMAT = 'JSON', "
                  "TOPIC_MIN_ACTIVE_PARTITIONS = 2)")
        s.execute('ALTER TOPIC "ks/t/f" ADD CONSUMER billing')
        stop = threading.Event()
        writer = threading.Thread(target=write_load, args=(s, stop), daemon=True)
        writer.start()
        browser = start_browser(1280, 1100)
        try:
            browser.get(c.url + "/")
            wait_for(lambda: text_of(browser, "#ov-writes") not in ("", "0"), what="writes on the overview")
            time.sleep(1)
            rows = browser.execute_script(WEIGHT)
            total = sum(r[1] for r in rows)
            for name, transferred, encoded, decoded in rows:
                print(f"{transferred:>8} bytes transferred ({decoded} decoded)  {name.replace(c.url, '')}")
            print(f"{total:>8} bytes transferred for a first load of the overview")
            consumer = KafkaConsumer("ks.t.f", bootstrap_servers=c.kafka, group_id="billing",
                                     auto_offset_reset="earliest", enable_auto_commit=False)
            polled = 0
            while polled < 200:
                polled += sum(len(m) for m in consumer.poll(timeout_ms=500).values())
            consumer.commit()
            for name, path, ready in PAGES:
                browser.get(c.url + path)
                wait_for(lambda: browser.find_elements("css selector", ready), what=f"the {name} page")
                time.sleep(12 if name in ("overview", "changefeed") else 2)  # let the charts fill
                if name == "changefeed":
                    consumer.poll(timeout_ms=500)
                    consumer.commit()
                    time.sleep(4)
                browser.save_screenshot(str(out / f"console-{name}.png"))
                print(f"saved {out / f'console-{name}.png'}")
            consumer.close()
        finally:
            stop.set()
            writer.join(10)
            browser.quit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
