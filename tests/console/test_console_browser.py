"""The console as a person uses it: a real ``logtide serve``, writes through cassandra-driver, a Kafka client
committing, and the pages in a real headless Chromium (``browser.py``; skipped, saying why, without it)."""

from __future__ import annotations

import uuid

import pytest

from .browser import chromium_or_skip, start_browser, text_of, wait_for
from .conftest import secured_console


@pytest.fixture
def browser():
    chromium_or_skip()
    driver = start_browser()
    try:
        yield driver
    finally:
        driver.quit()


def page_errors(driver) -> list[str]:
    """Errors the page's scripts logged (none expected)."""
    try:
        return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    except Exception:  # noqa: BLE001 - a driver without the log
        return []


def test_overview_shows_the_writes(console, browser):
    browser.get(console.url + "/")
    wait_for(lambda: text_of(browser, "#ov-writes") == "0", what="the overview with no writes")
    assert text_of(browser, "#ov-data-dir").endswith("/data")
    insert = console.session.prepare("INSERT INTO ks.t (pk, ck, v) VALUES (?, ?, ?)")
    for i in range(7):
        console.session.execute(insert, [i, 0, "x"])
    wait_for(lambda: text_of(browser, "#ov-writes") == "7", what="7 writes on the overview")
    wait_for(lambda: text_of(browser, "#ov-cdc-rows") == "14", what="14 CDC log rows")
    assert "the first, since the data directory began (32 streams" in text_of(browser, "#ov-generation")
    assert browser.find_elements("css selector", ".chart canvas"), "the charts are drawn"
    assert page_errors(browser) == []


def test_a_changefeed_page_shows_a_consumers_lag_rise_then_fall_to_zero_after_a_kafka_commit(console, browser):
    from kafka import KafkaConsumer

    browser.get(console.url + "/#/changefeed/ks/t/f")
    wait_for(lambda: text_of(browser, "#lag-billing") == "0", what="billing's lag 0 before any write")
    for i in range(5):
        console.session.execute("INSERT INTO ks.t (pk, ck, v) VALUES (%s, 1, 'x')", [i])
    wait_for(lambda: text_of(browser, "#lag-billing") == "5", what="billing's lag risen to 5")
    consumer = KafkaConsumer("ks.t.f", bootstrap_servers=console.kafka, group_id="billing",
                             auto_offset_reset="earliest", enable_auto_commit=False, session_timeout_ms=6000,
                             heartbeat_interval_ms=300)
    try:
        got = []
        wait_for(lambda: got.extend(m for ms in consumer.poll(timeout_ms=500).values() for m in ms) or len(got) >= 5,
                 what="the Kafka consumer reading 5 records")
        consumer.commit()
        wait_for(lambda: text_of(browser, "#lag-billing") == "0", what="billing's lag back to 0 after the commit")
        wait_for(lambda: "Kafka group" in text_of(browser, "h3"), what="the Kafka group beside the consumer")
    finally:
        consumer.close()
    assert browser.find_elements("css selector", ".chart canvas"), "the lag chart is drawn"
    assert page_errors(browser) == []


def test_the_record_browser_shows_a_record_written_a_moment_before(console, browser):
    browser.get(console.url + "/#/records/ks/t/f")
    wait_for(lambda: "No records" in text_of(browser, "#records"), what="an empty record browser")
    marker = f"fresh-{uuid.uuid4().hex[:8]}"
    console.session.execute("INSERT INTO ks.t (pk, ck, v) VALUES (42, 7, %s)", [marker])
    wait_for(lambda: marker in text_of(browser, "#records"), what="the new record in the browser")
    record = text_of(browser, "#records .record")
    assert '"key": [\n    42,\n    7\n  ]' in record and "partition 0 · offset 0" in record
    browser.get(console.url + "/#/log/ks/t")
    wait_for(lambda: marker in text_of(browser, "#records"), what="the new write in the CDC log browser")
    entry = text_of(browser, "#records .log-entry")
    assert "insert" in entry and "postimage" in entry and "key [42,7]" in entry
    assert page_errors(browser) == []


def test_with_auth_a_table_the_role_may_not_select_is_hidden(tmp_path, browser):
    with secured_console(tmp_path) as c:
        s = c.session
        s.execute("CREATE TABLE ks.open (pk int PRIMARY KEY, v text)")
        s.execute("CREATE TABLE ks.secret (pk int PRIMARY KEY, v text)")
        s.execute("CREATE ROLE reader WITH PASSWORD = 'pw' AND LOGIN = true")
        s.execute("GRANT SELECT ON ks.open TO reader")
        browser.get(c.url + "/#/tables")
        wait_for(lambda: browser.find_elements("css selector", "#login"), what="the login form")
        log_in(browser, "reader", "wrong")
        wait_for(lambda: "incorrect" in text_of(browser, "#login-error"), what="a refused login")
        log_in(browser, "reader", "pw")
        wait_for(lambda: "ks.open" in text_of(browser, "main"), what="the tables reader may SELECT")
        assert "ks.secret" not in text_of(browser, "main")
        assert "Logged in as reader" in text_of(browser, "#who")
        cookie = browser.get_cookie("logtide_console")
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"


def log_in(browser, role: str, password: str) -> None:
    """Fill the console's login form and send it."""
    for field, value in (("#username", role), ("#password", password)):
        browser.find_element("css selector", field).clear()
        browser.find_element("css selector", field).send_keys(value)
    browser.find_element("css selector", "#login button").click()
