"""People at the table, in a real headless Chromium: ``mesa-dilemmas host`` end to end.

Each test starts the command as a user does (``python -m mesa_dilemmas.viz.host.cli``), opens
the experimenter's console and one browser context per person (separate cookies: separate
people), plays a tiny game to its end through the pages and then reads the run directory the
session wrote.  What is asserted is what the pages show (``data-*`` attributes) and what the
tables hold.  ``MESA_DILEMMAS_UPDATE_DOCS_IMAGES=1`` also refreshes ``docs/images/host_*.png``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from dashboard_fixtures import (  # noqa: F401
    CHROMIUM,
    REPO,
    browser_fixture,
    free_port,
    require_assets,
    require_browser,
)
from llm_fixtures import wait_http

ARTIFACTS = REPO / "test-artifacts" / "host"
DOCS_IMAGES = REPO / "docs" / "images"
VIEWPORT = {"width": 1100, "height": 1300}


@dataclass
class Host:
    console: str
    base: str
    out: Path

    def seats(self) -> list[dict[str, Any]]:
        deadline = time.monotonic() + 60
        path = self.out / "seats.json"
        while not path.is_file():
            assert time.monotonic() < deadline, "seats.json was not written"
            time.sleep(0.2)
        return json.loads(path.read_text())


@contextlib.contextmanager
def serve_host(tmp: Path, scenario: str, *args: str) -> Iterator[Host]:
    require_browser()
    require_assets()
    out = tmp / "run"
    env = {**os.environ, "SOLARA_TELEMETRY_MIXPANEL_ENABLE": "False", "PYTHONUNBUFFERED": "1"}
    cmd = [
        sys.executable, "-m", "mesa_dilemmas.viz.host.cli", scenario, "--port", str(free_port()),
        "--out", str(out), "--no-assets", *args,
    ]  # fmt: skip
    with (tmp / "server.log").open("w") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True, env=env)
        try:
            assert proc.stdout is not None
            first = proc.stdout.readline()
            match = re.search(r"(http://127\.0\.0\.1:\d+)/console\?key=\S+", first)
            assert match, f"the host did not print its console: {first!r}"
            wait_http(match.group(1) + "/", timeout=120.0, proc=proc)
            yield Host(console=match.group(0), base=match.group(1), out=out)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def screenshot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    if os.environ.get("MESA_DILEMMAS_UPDATE_DOCS_IMAGES"):
        shutil.copy(path, DOCS_IMAGES / f"host_{name}.png")


class Person:
    """One participant: a browser context of their own on a join link."""

    def __init__(self, browser: Any, host: Host, code: str) -> None:
        self.browser, self.host, self.code = browser, host, code
        self.errors: list[str] = []
        self.open()

    def open(self) -> None:
        self.context = self.browser.new_context(viewport=VIEWPORT)
        self.page = self.context.new_page()
        self.page.set_default_timeout(30_000)
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.page.goto(f"{self.host.base}/play?code={self.code}")
        self.page.wait_for_selector(f"[data-seat='{self.code}']", timeout=60_000)

    def close(self) -> None:
        self.context.close()

    def attr(self, name: str) -> str:
        return str(self.page.locator("[data-seat]").get_attribute(f"data-{name}") or "")

    def join(self) -> None:
        self.page.wait_for_selector("[data-state='consent']")
        self.page.get_by_role("button", name="I agree").click()
        self.page.wait_for_selector("[data-state='instructions']")
        self.page.get_by_role("button", name="I have read the instructions").click()
        self.page.wait_for_selector("[data-state='joined'], [data-state='deciding']")

    def deciding(self, timeout: float = 30_000) -> str:
        """Wait for an open decision; its id."""
        self.page.wait_for_selector("[data-state='deciding'][data-pending]", timeout=timeout)
        return self.attr("pending")

    def choose(self, option: str, field: str = "answer") -> None:
        box = self.page.locator(f"[data-field='{field}']").first
        box.get_by_role("button", name=option, exact=True).click()
        self.synced()

    def synced(self) -> None:
        """Wait until the server holds what the form shows (its draft, drawn from the server)."""
        self.page.wait_for_function(
            """() => { const d = document.querySelector('[data-draft]');
                       return d && d.dataset.draft !== 'null'; }"""
        )
        time.sleep(0.05)

    def type(self, text: str, field: str = "answer", tag: str = "input[type='text']") -> None:
        self.page.locator(f"[data-field='{field}'] {tag}").first.fill(text)

    def submit(self) -> None:
        """Submit and wait until that decision is closed (the next may open at once)."""
        old = self.attr("pending")
        self.page.get_by_role("button", name="Submit").click()
        self.page.wait_for_function(
            "o => document.querySelector('[data-seat]').dataset.pending !== o", arg=old
        )


def console_page(browser: Any, host: Host) -> Any:
    page = browser.new_context(viewport={"width": 1300, "height": 900}).new_page()
    page.set_default_timeout(30_000)
    page.goto(host.console)
    page.wait_for_selector("[data-console]", timeout=60_000)
    return page


def group_state(console: Any, group: int) -> str:
    return str(console.locator(f"[data-group='{group}']").get_attribute("data-group-state"))


def test_four_people_play_a_public_goods_game_to_its_end(browser, tmp_path) -> None:
    with serve_host(tmp_path, "public_goods/four_people") as host:
        console = console_page(browser, host)
        seats = host.seats()
        assert len(seats) == 4 and len({s["code"] for s in seats}) == 4
        people = [Person(browser, host, s["code"]) for s in seats]
        for p in people:
            p.join()
        console.wait_for_selector("[data-group='0'][data-ready='1'][data-joined='4']")
        screenshot(console, "console")
        console.get_by_role("button", name="Start all").click()
        plan = {0: "CDC", 1: "CCD", 2: "DDD", 3: "CCC"}  # seat -> the three rounds' choices
        by_seat = {s["seat"]: p for s, p in zip(seats, people, strict=True)}
        ids = {seat: [] for seat in plan}
        for r in range(3):
            for seat, p in by_seat.items():
                ids[seat].append(p.deciding())
                assert p.attr("round") == str(r + 1)
                if r == 0 and seat == 1:  # an empty answer goes back with the spec's words
                    p.page.get_by_role("button", name="Submit").click()
                    p.page.wait_for_selector("[data-error]")
                    assert "expected one of [C, D]" in p.page.inner_text("[data-error]")
                    assert p.attr("state") == "deciding" and p.attr("pending") == ids[seat][-1]
                if r == 0 and seat == 0:
                    shown = p.page.inner_text("[data-observation]")
                    assert "n players" in shown and "my actions" in shown
                    screenshot(p.page, "participant")
                if r == 1 and seat == 2:  # reconnect mid-decision with a draft chosen
                    p.choose("D")
                    p.page.wait_for_selector("[data-draft='\"D\"']")
                    participant = p.attr("participant")
                    p.close()
                    p.open()  # a new browser context, the same join link
                    assert p.attr("state") == "deciding"  # no consent again: the same state
                    assert p.attr("participant") == participant
                    assert p.attr("pending") == ids[seat][-1]
                    active = p.page.locator("[data-field='answer'] .v-btn--active")
                    assert active.inner_text().strip() == "D"  # the draft survived
                    p.submit()
                    continue
                p.choose(plan[seat][r])
                p.submit()
        for p in people:
            p.page.wait_for_selector("[data-state='finished']")
        console.wait_for_selector("[data-group='0'][data-group-state='finished']")
        console.get_by_role("button", name="Export").click()
        console.wait_for_selector("[data-exported]")
        assert all(not p.errors for p in people), [p.errors for p in people]

    runs = pd.read_parquet(host.out / "runs.parquet")
    assert runs.loc[0, "state"] == "finished" and runs.loc[0, "steps_run"] == 3
    assert runs.loc[0, "human_decisions"] == 12 and runs.loc[0, "invalid_answers"] == 1
    decisions = pd.read_parquet(host.out / "decisions.parquet")
    assert len(decisions) == 12 and set(decisions["seat_kind"]) == {"human"}
    agents = pd.read_parquet(host.out / "agents.parquet")
    seat_of = dict(zip(agents["AgentID"], agents["seat"], strict=False))
    decisions["seat"] = decisions["AgentID"].map(seat_of)
    got = {
        seat: "".join(json.loads(a) for a in rows.sort_values("Step")["answer"])
        for seat, rows in decisions.groupby("seat")
    }
    assert got == plan  # what each page clicked is what the game played
    assert (decisions["response_time_s"] > 0).all() and not decisions["timed_out"].any()
    steps = pd.read_parquet(host.out / "steps.parquet")
    coop = [sum(plan[s][r] == "C" for s in plan) / 4 for r in range(3)]
    assert steps.sort_values("Step")["cooperation_rate"].tolist() == pytest.approx(coop)
    assert set(agents["seat_kind"]) == {"human"} and (agents["response_time_s"] > 0).all()


def test_the_console_runs_two_groups_and_a_time_out_is_recorded(browser, tmp_path) -> None:
    args = ("--set", "host.time_limit_s=5", "--groups", "2")
    with serve_host(tmp_path, "public_goods/with_strategies", *args) as host:
        console = console_page(browser, host)
        seats = host.seats()
        assert [s["group"] for s in seats] == [0, 1]
        quick, slow = (Person(browser, host, s["code"]) for s in seats)
        quick.join()
        slow.join()
        console.get_by_role("button", name="Start all").click()
        console.wait_for_selector("[data-group='0'][data-group-state='running']")
        console.wait_for_selector("[data-group='1'][data-group-state='running']")
        for c in "CCD":  # the quick one answers at once, in the first group
            quick.deciding()
            quick.choose(c)
            quick.submit()
        # the slow one lets the first decision run out: it is flagged and stays open ("wait")
        slow.deciding()
        slow.page.wait_for_selector("[data-remaining='0']", timeout=15_000)
        assert "time is up" in slow.page.inner_text("[data-remaining]")
        console.wait_for_function(  # the console counts the time-out while it is still open
            """code => { const row = document.querySelector(`[data-code='${code}']`);
                         return row && row.dataset.seatState === 'deciding'
                                && row.lastElementChild.textContent.trim() === '1'; }""",
            arg=slow.code,
        )
        screenshot(slow.page, "timeout")
        for c in "DCC":
            slow.deciding()
            slow.choose(c)
            slow.submit()
        for p in (quick, slow):
            p.page.wait_for_selector("[data-state='finished']")
        console.wait_for_selector("[data-group='0'][data-group-state='finished']")
        console.wait_for_selector("[data-group='1'][data-group-state='finished']")
        screenshot(console, "console_two_groups")

    runs = pd.read_parquet(host.out / "runs.parquet").sort_values("RunId")
    assert runs["state"].tolist() == ["finished", "finished"]
    decisions = pd.read_parquet(host.out / "decisions.parquet")
    human = decisions[decisions["seat_kind"] == "human"].sort_values(["RunId", "Step"])
    timed_out = human["timed_out"].astype(bool)
    # the slow person's first decision ran out; every decision is flagged exactly when it took
    # longer than the limit (a loaded machine may make the quick one late too: still flagged)
    assert timed_out.tolist()[3] and runs["timeouts"].tolist()[1] >= 1
    assert (timed_out == (human["response_time_s"] >= 5)).all()
    assert runs["timeouts"].tolist() == human.groupby("RunId")["timed_out"].sum().tolist()
    assert human["answered"].astype(bool).all()  # "wait": the late answers were still taken
    assert set(decisions["seat_kind"]) == {"human", "strategy"}
    agents = pd.read_parquet(host.out / "agents.parquet")
    assert set(agents["seat_kind"]) == {"human", "strategy"}
    assert agents.groupby("RunId")["Step"].max().tolist() == [3, 3]


def test_one_person_fishes_with_nine_rule_villagers(browser, tmp_path) -> None:
    with serve_host(tmp_path, "fishery/one_villager", "--set", "max_steps=1") as host:
        console = console_page(browser, host)
        (seat,) = host.seats()
        person = Person(browser, host, seat["code"])
        person.join()
        console.get_by_role("button", name="Start all").click()
        person.deciding()
        assert "effort" in person.page.inner_text("[data-decision]")
        assert "lake stock" in person.page.inner_text("[data-observation]")
        person.type("1.5")  # outside [0, 1]: refused, never clamped
        person.page.get_by_role("button", name="Submit").click()
        person.page.wait_for_selector("[data-error]")
        person.type("0.25")
        screenshot(person.page, "fishery_effort")
        person.submit()
        person.deciding()
        assert "punish" in person.page.inner_text("[data-decision]")
        person.choose("none")
        person.submit()
        person.deciding()
        assert "norms" in person.page.inner_text("[data-decision]")
        person.type("Take little.", "answer.personal", "textarea")
        person.type("Everyone takes at most 3 fish.", "answer.community", "textarea")
        person.submit()
        person.deciding()
        assert "vote" in person.page.inner_text("[data-decision]")
        person.page.locator("[data-field='answer'] .v-btn").first.click()
        person.synced()
        person.submit()
        person.page.wait_for_selector("[data-state='finished']")
        console.wait_for_selector("[data-group='0'][data-group-state='finished']")
        assert not person.errors

    decisions = pd.read_parquet(host.out / "decisions.parquet")
    human = decisions[decisions["seat_kind"] == "human"]
    assert human["kind"].tolist() == [
        "fishery.effort", "fishery.punish", "fishery.norms", "fishery.vote",
    ]  # fmt: skip
    assert json.loads(human["answer"].iloc[0]) == pytest.approx(0.25)
    assert human["invalid_answers"].tolist() == [1, 0, 0, 0]
    assert json.loads(human["answer"].iloc[2]) == {
        "personal": "Take little.",
        "community": "Everyone takes at most 3 fish.",
    }
    agents = pd.read_parquet(host.out / "agents.parquet")
    kinds = agents.groupby("seat_kind")["AgentID"].nunique().to_dict()
    assert kinds == {"human": 1, "rule": 9}


def test_two_people_and_three_rule_players_play_a_round_of_port_of_mars(browser, tmp_path) -> None:
    with serve_host(tmp_path, "port_of_mars/two_people", "--set", "max_steps=1") as host:
        console = console_page(browser, host)
        people = [Person(browser, host, s["code"]) for s in host.seats()]
        for p in people:
            p.join()
        console.get_by_role("button", name="Start all").click()

        def answer(i: int, p: Person, kind: str) -> None:
            name = kind.rsplit(".", 1)[-1]
            if name == "health_plan":
                p.type(str(3 + i))
            elif name == "invest":  # a box per resource, all optional
                p.type("2", "answer.port_health")
                if i == 0:
                    screenshot(p.page, "port_of_mars_invest")
            elif name == "trade_offer" and i == 0:  # one offer, asking for one unit
                p.page.locator("[data-field='answer']").get_by_role("button", name="add").click()
                p.page.wait_for_selector("[data-field='answer.0.to']")
                p.page.locator("[data-field='answer.0.to'] .v-btn").last.click()
                p.synced()
                box = p.page.locator("[data-field^='answer.0.receive.'] input[type='text']")
                box.first.fill("1")
            elif name in ("trade_offer", "discard"):  # lists left empty: no offer, no discard
                pass
            else:  # a choice: a goal card, a reply to an offer, ...
                p.page.locator("[data-field='answer'] .v-btn").first.click()
                p.synced()

        # the phases ask both people at once; a reply to an offer is asked of one person
        seen: list[list[str]] = [[], []]
        deadline = time.monotonic() + 120
        while not all(p.attr("state") == "finished" for p in people):
            assert time.monotonic() < deadline, seen
            for i, p in enumerate(people):
                if p.attr("state") != "deciding" or not p.attr("pending"):
                    continue
                kind = str(p.page.locator("[data-decision]").get_attribute("data-decision"))
                seen[i].append(kind)
                answer(i, p, kind)
                p.submit()
            time.sleep(0.1)
        for i in range(2):
            assert {"port_of_mars.health_plan", "port_of_mars.invest"} <= set(seen[i])
        for p in people:
            p.page.wait_for_selector("[data-state='finished']")
        console.wait_for_selector("[data-group='0'][data-group-state='finished']")
        assert all(not p.errors for p in people)

    decisions = pd.read_parquet(host.out / "decisions.parquet")
    human = decisions[decisions["seat_kind"] == "human"]
    first = human[human["AgentID"] == human["AgentID"].min()].set_index("kind")["answer"]
    assert json.loads(first["port_of_mars.health_plan"]) == 3
    invested = json.loads(first["port_of_mars.invest"])  # the spec fills what was left blank
    assert invested["port_health"] == 2 and sum(invested.values()) == 2
    (offer,) = json.loads(first["port_of_mars.trade_offer"])
    assert sum(offer["receive"].values()) == 1
    agents = pd.read_parquet(host.out / "agents.parquet")
    assert agents.groupby("seat_kind")["AgentID"].nunique().to_dict() == {"human": 2, "rule": 3}
