"""Judging a client: one check function per rule, each reading a scenario's record (the
requests as they arrived, the client's exit) and returning check results that name their
requirement. The checks each scenario gets are those whose facts it has: a check that finds
nothing to judge in a scenario returns nothing.

Waits are measured on the server's monotonic clock, from the moment an answer started to the
moment the next request arrived: whatever the client's own latency, it can only make a client
look later, never earlier. An HTTP-date or a Reset names a wall-clock moment; it is compared
with the wall clock at arrival (the scenario server and the client share the machine's clock).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from email.utils import parsedate_to_datetime

from conformance.client_mode.recorder import Arrival
from conformance.client_mode.runner import ScenarioRun
from conformance.client_mode.scenarios import CREATE, GIVE_UP_SECONDS, HAMMERING_THRESHOLD, LIST
from conformance.judging.checks import CheckResult
from conformance.spec import all_requirements

TOLERANCE = 0.1  # seconds a request may come early: timers, event loops, clock reads
GROWTH = 1.25  # the last of three waits against the first, without Retry-After
GROWTH_SECONDS = 0.2  # ... and at least this much longer
UMBRELLAS = {  # the document's own rule, judged through its more specific parts
    "CLI-RETRY-AFTER": "LIM-CLIENT-BACKOFF",
    "CLI-BACKOFF-GROWS": "LIM-CLIENT-BACKOFF",
    "CLI-NO-HAMMERING": "LIM-BAN",
    "CLI-GIVES-UP": "LIM-BAN",
}


@dataclass(frozen=True)
class Early:
    """A request that came before the wait an earlier answer asked for was over."""

    arrival: Arrival
    answer: Arrival  # the answer whose wait it broke
    early: float  # seconds before the end of that wait
    after: float  # seconds after that answer
    position: int  # the request's number in its scenario, from 1


def result(
    run: ScenarioRun,
    check: Callable,
    requirement_id: str,
    passed: bool,
    message: str,
    arrival: Arrival | None = None,
) -> list[CheckResult]:
    """The result, and the same for the rule it is part of (which yields to it when failed)."""
    test_id = f"{run.scenario.name}::{check.__name__}"
    exchange = arrival.exchange if arrival is not None else None
    results = [CheckResult(requirement_id, passed, message, test_id, exchange)]
    if requirement_id in UMBRELLAS:
        results.append(CheckResult(UMBRELLAS[requirement_id], passed, message, test_id, exchange))
    return results


def wait_end(answer: Arrival) -> float | None:
    """When the answer's `Retry-After` ends, on the monotonic clock; None without one."""
    value = (answer.header("Retry-After") or "").strip()
    if value.isdigit():
        return answer.answered + int(value)
    try:
        moment = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError):
        return None
    return answer.answered + (moment - answer.answered_wall)


def early_requests(run: ScenarioRun, statuses: Iterable[int]) -> list[Early]:
    """Requests sent before the `Retry-After` of an earlier answer of these statuses passed."""
    wanted = set(statuses)
    found = []
    arrivals = run.arrivals
    for index, arrival in enumerate(arrivals):
        worst: Early | None = None
        for answer in arrivals[:index]:
            end = wait_end(answer) if answer.status in wanted else None
            if end is None or not answer.answered or answer.answered > arrival.arrived:
                continue
            early = end - arrival.arrived
            if early > TOLERANCE and (worst is None or early > worst.early):
                worst = Early(arrival, answer, early, arrival.arrived - answer.answered, index + 1)
        if worst is not None:
            found.append(worst)
    return found


def waited_for(run: ScenarioRun, statuses: Iterable[int]) -> bool:
    """Whether an answer of these statuses asked for a wait and the client came back after it."""
    wanted = set(statuses)
    return any(a.status in wanted and wait_end(a) is not None for a in run.arrivals[:-1])


def describe_early(item: Early) -> str:
    given = item.answer.header("Retry-After")
    return (
        f"came back {item.after:.3f} s after a {item.answer.status} with Retry-After: {given}, "
        f"{item.early:.3f} s before that wait was over (request {item.position} of the scenario)"
    )


def check_bearer_key(run: ScenarioRun) -> list[CheckResult]:
    wrong = [a for a in run.arrivals if not a.bearer_key]
    if not run.arrivals:
        return []
    if wrong:
        sent = wrong[0].exchange.request_headers
        shown = next((v for k, v in sent.items() if k.lower() == "authorization"), "(absent)")
        message = (
            f"{len(wrong)} of {len(run.arrivals)} requests did not carry "
            f"`Authorization: Bearer <the key>` (the first sent Authorization: {shown})"
        )
        return result(run, check_bearer_key, "CLI-BEARER-KEY", False, message, wrong[0])
    message = f"all {len(run.arrivals)} requests carried the key as a bearer token"
    return result(run, check_bearer_key, "CLI-BEARER-KEY", True, message)


def check_key_not_in_url(run: ScenarioRun) -> list[CheckResult]:
    if not run.arrivals:
        return []
    leaked = [a for a in run.arrivals if a.key_in_url]
    if leaked:
        message = f"{len(leaked)} requests had the API key in the URL: {leaked[0].exchange.url}"
        return result(run, check_key_not_in_url, "CLI-KEY-NOT-IN-URL", False, message, leaked[0])
    return result(run, check_key_not_in_url, "CLI-KEY-NOT-IN-URL", True, "no key in any URL")


OPERATION_METHODS = {LIST: "GET", CREATE: "POST"}
SHOWN_OTHERS = 5  # kinds of other requests named in a message


def request_line(arrival: Arrival) -> str:
    """`METHOD /path` of a request, without its host and query."""
    exchange = arrival.exchange
    path = "/" + exchange.url.split("?", 1)[0].split("://", 1)[-1].partition("/")[2]
    return f"{exchange.method} {path}"


def is_asked(arrival: Arrival, operation: str) -> bool:
    """Whether the request is the operation the scenario asked for (GET or POST /categories)."""
    method, _, path = request_line(arrival).partition(" ")
    return method == OPERATION_METHODS[operation] and path.endswith("/v1/categories")


def asked(run: ScenarioRun) -> list[Arrival]:
    """The requests the scenario is about: its operation's, wherever they came in the client's
    sequence (a client may list the categories after it created one)."""
    return [arrival for arrival in run.arrivals if is_asked(arrival, run.scenario.operation)]


def others(run: ScenarioRun) -> str:
    """The client's other requests, each kind once with its count ("" when there are none)."""
    lines = [request_line(a) for a in run.arrivals if not is_asked(a, run.scenario.operation)]
    counted = {line: lines.count(line) for line in lines}
    shown = [line + (f" ({n} times)" if n > 1 else "") for line, n in counted.items()]
    if len(shown) > SHOWN_OTHERS:
        shown = shown[:SHOWN_OTHERS] + [f"{len(shown) - SHOWN_OTHERS} more kinds"]
    return ", ".join(shown)


def also_sent(run: ScenarioRun) -> str:
    sent = others(run)
    return f"; also sent: {sent}" if sent else ""


def check_create_body(run: ScenarioRun) -> list[CheckResult]:
    if run.scenario.operation != CREATE or not run.arrivals:
        return []
    creates = asked(run)
    if not creates:
        message = (
            f"createCategory (POST .../v1/categories) was never sent; the client sent: "
            f"{others(run)}"
        )
        return result(run, check_create_body, "CLI-CREATE-JSON", False, message, run.arrivals[0])
    wanted = run.scenario.category_name
    for arrival in creates:
        problem = create_problem(arrival, wanted)
        if problem:
            message = problem + also_sent(run)
            return result(run, check_create_body, "CLI-CREATE-JSON", False, message, arrival)
    message = f"{len(creates)} POST /categories with a JSON NewCategory" + also_sent(run)
    return result(run, check_create_body, "CLI-CREATE-JSON", True, message)


def create_problem(arrival: Arrival, name: str) -> str | None:
    """What is wrong with a POST /categories as a createCategory, or None."""
    if arrival.media_type != "application/json":
        return f"the body's Content-Type was {arrival.media_type or 'absent'}, not application/json"
    body = arrival.body
    if not isinstance(body, dict):
        return f"the body is not a JSON object: {arrival.exchange.request_body!r:.80}"
    if body.get("name") != name:
        return f"the body's name is {body.get('name')!r}, not the {name!r} it was asked for"
    return None


def check_waits_for_retry_after(run: ScenarioRun) -> list[CheckResult]:
    return judge_waits(run, check_waits_for_retry_after, "CLI-RETRY-AFTER", 429)


def check_waits_after_503(run: ScenarioRun) -> list[CheckResult]:
    return judge_waits(run, check_waits_after_503, "CLI-503-RETRY-AFTER", 503)


def judge_waits(run: ScenarioRun, check: Callable, requirement_id: str, status: int):
    early = early_requests(run, [status])
    if early:
        message = f"{len(early)} early: the first {describe_early(early[0])}"
        return result(run, check, requirement_id, False, message, early[0].arrival)
    if not waited_for(run, [status]):
        return []
    return result(run, check, requirement_id, True, f"every {status}'s Retry-After was waited")


def early_per_limitation(run: ScenarioRun, early: list[Early]) -> list[list[Early]]:
    """The early requests grouped by limitation, as the reference counts strikes: one starts
    with a 429 to a request that was not itself early, and lasts until the client waits."""
    by_arrival = {id(item.arrival): item for item in early}
    groups: list[list[Early]] = []
    for arrival in run.arrivals:
        item = by_arrival.get(id(arrival))
        if item is not None and groups:
            groups[-1].append(item)
        elif arrival.status == 429:
            groups.append([])
    return groups


def check_no_hammering(run: ScenarioRun) -> list[CheckResult]:
    groups = early_per_limitation(run, early_requests(run, [429]))
    worst = max(groups, key=len, default=[])
    if len(worst) >= HAMMERING_THRESHOLD:
        banned = any("key_banned" in (a.exchange.response_body or "") for a in run.arrivals)
        message = (
            f"{len(worst)} requests sent while limited by one 429 (the ban's threshold is "
            f"{HAMMERING_THRESHOLD}); the first {describe_early(worst[0])}"
            + ("; the scenario server banned the key" if banned else "")
        )
        evidence = worst[HAMMERING_THRESHOLD - 1].arrival
        return result(run, check_no_hammering, "CLI-NO-HAMMERING", False, message, evidence)
    if not waited_for(run, [429]):
        return []
    message = f"at most {len(worst)} requests while limited, under the ban's threshold"
    return result(run, check_no_hammering, "CLI-NO-HAMMERING", True, message)


def check_retries(run: ScenarioRun) -> list[CheckResult]:
    """A 429 to a GET is worth retrying after its wait: careful libraries do so by default. A
    SHOULD: the document says when a client may come back, not that it must, and a POST is not
    asked about (a client may decline to repeat it, RFC 9110 section 9.2.2)."""
    scenario = run.scenario
    if scenario.operation != LIST or not scenario.expect_success:
        return []
    if not (scenario.script.refusals and scenario.script.status == 429):
        return []
    lists = asked(run)
    if not lists or lists[0].status != 429:
        return []
    if len(lists) > 1:
        served = sum(200 <= a.status < 300 for a in lists)
        message = (
            f"retried: {len(lists)} GET /categories, {served} served, exit {run.exit_status}"
            + also_sent(run)
        )
        return result(run, check_retries, "CLI-RETRIES", True, message)
    how = "was stopped at its time limit" if run.stopped else f"exited {run.exit_status}"
    what = "it no more" if others(run) else "nothing more"
    message = (
        f"after one 429 (Retry-After: {lists[0].header('Retry-After') or 'none'}) to a GET "
        f"/categories the client sent {what} and {how}: it gave up where it could have waited"
        + also_sent(run)
    )
    return result(run, check_retries, "CLI-RETRIES", False, message, lists[0])


def check_backoff_grows(run: ScenarioRun) -> list[CheckResult]:
    if run.scenario.script.retry_after is not None or not run.scenario.script.refusals:
        return []
    waits = refusal_waits(run)
    if len(waits) < 3:  # a client that gave up sooner: see unshown
        return []
    shown = ", ".join(f"{wait:.2f}" for wait in waits)
    if waited_for_resets(run):
        message = f"waits {shown} s: each to the X-RateLimit-Reset its 429 named"
        return result(run, check_backoff_grows, "CLI-BACKOFF-GROWS", True, message)
    first, last = waits[0], waits[-1]
    passed = last >= max(GROWTH * first, first + GROWTH_SECONDS)
    message = (
        f"waits after 429s without Retry-After: {shown} s; the last must be at least "
        f"{GROWTH:g} times the first and {GROWTH_SECONDS:g} s longer"
    )
    evidence = run.arrivals[len(waits)] if not passed else None
    return result(run, check_backoff_grows, "CLI-BACKOFF-GROWS", passed, message, evidence)


def waited_for_resets(run: ScenarioRun) -> bool:
    """Whether, after every 429, the client waited for the X-RateLimit-Reset it named: the
    server's own word on when to come back, as good as a back-off of the client's."""
    pairs = list(zip(run.arrivals, run.arrivals[1:], strict=False))
    limited = [(this, nxt) for this, nxt in pairs if this.status == 429]
    for this, nxt in limited:
        try:
            reset = float(this.header("X-RateLimit-Reset") or "")
        except ValueError:
            return False
        if reset - nxt.arrived_wall > TOLERANCE:
            return False
    return bool(limited)


def refusal_waits(run: ScenarioRun) -> list[float]:
    """Seconds from each 429 to the next request, in order."""
    arrivals = run.arrivals
    return [
        nxt.arrived - this.answered
        for this, nxt in zip(arrivals, arrivals[1:], strict=False)
        if this.status == 429
    ]


GAVE_UP = "it may: no MUST requires a retry"
NEVER_BACK = {  # what cannot be judged of a client that never came back after such a refusal
    429: ("CLI-RETRY-AFTER", "CLI-NO-HAMMERING", "LIM-CLIENT-BACKOFF"),
    503: ("CLI-503-RETRY-AFTER",),
}


def unshown(runs: list[ScenarioRun]) -> dict[str, str]:
    """Why rules of waiting were not judged of a client that gave up where it could have
    waited (its choice): said plainly, not failed, and no reason to withhold a verdict."""
    reasons = {}
    runs = [judged(run) for run in runs]
    for status, requirement_ids in NEVER_BACK.items():
        gave_up = [run for run in runs if run.arrivals and run.arrivals[-1].status == status]
        if gave_up and not any(waited_for(run, [status]) for run in runs):
            scenarios = f"{len(gave_up)} scenario" + "s" * (len(gave_up) > 1)
            reason = (
                f"the client never came back after a {status} (it gave up at once in "
                f"{scenarios}; {GAVE_UP}): no wait of its to judge"
            )
            reasons.update(dict.fromkeys(requirement_ids, reason))
    for run in runs:
        script, waits = run.scenario.script, refusal_waits(run)
        gave_up = run.arrivals and run.arrivals[-1].status == 429
        if gave_up and script.retry_after is None and script.refusals and len(waits) < 3:
            # Three waits are needed to see them grow: jitter hides growth in two.
            reasons["CLI-BACKOFF-GROWS"] = (
                f"the client gave up after {len(waits)} retries without Retry-After ({GAVE_UP}; "
                "three waits are needed to see them grow)"
            )
    return reasons


def check_gives_up(run: ScenarioRun) -> list[CheckResult]:
    if not run.scenario.script.endless or not run.arrivals:
        return []
    last = run.arrivals[-1]
    first = run.arrivals[0]
    span = last.arrived - first.answered
    if run.stopped or run.exit_status == 0 or span > GIVE_UP_SECONDS:
        how = f"exited {run.exit_status}"
        if run.stopped:
            how = f"was still running at {run.time_limit:g} s and was stopped"
        if run.flooded:
            how = "was stopped there, the most a scenario records"
        message = (
            f"on a 429 that never ends the client sent {len(run.arrivals)} requests over "
            f"{span:.1f} s and {how}; it must give up within {GIVE_UP_SECONDS} s, exit non-zero"
        )
        return result(run, check_gives_up, "CLI-GIVES-UP", False, message, last)
    message = f"gave up after {len(run.arrivals)} requests, {span:.1f} s, exit {run.exit_status}"
    return result(run, check_gives_up, "CLI-GIVES-UP", True, message)


def check_no_unchanged_retry(run: ScenarioRun) -> list[CheckResult]:
    refused = [a for a in run.arrivals if a.status in (400, 401)]
    if not refused:
        return []
    for arrival in run.arrivals:
        earlier = next(
            (
                a
                for a in refused
                if a.fingerprint == arrival.fingerprint
                and a.answered
                and a.answered <= arrival.arrived
            ),
            None,
        )
        if earlier is not None:
            message = (
                f"the request answered {earlier.status} was sent again unchanged "
                f"{arrival.arrived - earlier.answered:.3f} s later"
            )
            return result(
                run, check_no_unchanged_retry, "CLI-NO-RETRY-UNCHANGED", False, message, arrival
            )
    message = f"no request answered {refused[0].status} was repeated unchanged"
    return result(run, check_no_unchanged_retry, "CLI-NO-RETRY-UNCHANGED", True, message)


def check_waits_for_reset(run: ScenarioRun) -> list[CheckResult]:
    if not run.scenario.script.spend_window:
        return []
    arrivals = run.arrivals
    judged = 0
    for this, nxt in zip(arrivals, arrivals[1:], strict=False):
        reset = spent_until(this)
        if reset is None:
            continue
        judged += 1
        early = reset - nxt.arrived_wall
        if early > TOLERANCE:
            message = (
                f"after X-RateLimit-Remaining: 0 with X-RateLimit-Reset: {int(reset)}, the next "
                f"request came {early:.3f} s before that reset"
            )
            return result(run, check_waits_for_reset, "CLI-WAITS-FOR-RESET", False, message, nxt)
    if not judged:
        return []
    message = f"waited for the reset {judged} times"
    return result(run, check_waits_for_reset, "CLI-WAITS-FOR-RESET", True, message)


def spent_until(arrival: Arrival) -> float | None:
    """The Reset a served answer with nothing remaining names (a wall-clock moment)."""
    if not 200 <= arrival.status < 300 or (arrival.header("X-RateLimit-Remaining") or "") != "0":
        return None
    try:
        return float(arrival.header("X-RateLimit-Reset") or "")
    except ValueError:
        return None


CHECKS = (
    check_bearer_key,
    check_key_not_in_url,
    check_create_body,
    check_waits_for_retry_after,
    check_waits_after_503,
    check_no_hammering,
    check_retries,
    check_backoff_grows,
    check_gives_up,
    check_no_unchanged_retry,
    check_waits_for_reset,
)


def judged(run: ScenarioRun) -> ScenarioRun:
    """The run as the rules read it: without the requests the scenario server refused before
    they were whole (a body over its bound, or too slow to come), which show nothing."""
    return replace(run, arrivals=[arrival for arrival in run.arrivals if arrival.complete])


def check_scenario(run: ScenarioRun) -> list[CheckResult]:
    """Every rule's checks of one scenario's run (the verdict of the whole run is
    `command.verdict_of`)."""
    run = judged(run)
    return [item for check in CHECKS for item in check(run)]


def nothing_shown(runs: list[ScenarioRun]) -> str | None:
    """Why there is nothing to judge when the client sent no whole request in any scenario: such
    a client is never certified, whatever scenarios were chosen."""
    if any(arrival.complete for run in runs for arrival in run.arrivals):
        return None
    refused = [arrival for run in runs for arrival in run.arrivals]
    if not refused:
        return "the client sent no request in any scenario"
    statuses = ", ".join(sorted({str(arrival.status) for arrival in refused}))
    return (
        f"the client sent no whole request in any scenario ({len(refused)} refused before "
        f"they were read to the end: {statuses})"
    )


@dataclass
class Settled:
    kept: list[CheckResult]
    displaced: dict[str, set[str]]  # requirement -> the failed ones it yielded to

    def displaced_reasons(self) -> dict[str, str]:
        """Why each displaced requirement was not judged (the verdict names the outcomes)."""
        return {id_: f"blocked by {', '.join(sorted(o))}" for id_, o in self.displaced.items()}


def settle_across_run(results: list[CheckResult]) -> Settled:
    """One retry policy, one cause: a requirement whose `yields_to` names one that failed
    anywhere in the run is not judged (all its results go), blocked by the failures that
    stand (those that yielded to nothing themselves)."""
    requirements = all_requirements()
    failed = {r.requirement_id for r in results if not r.passed}
    yielding = {
        requirement_id: set(requirements[requirement_id].yields_to) & failed
        for requirement_id in {r.requirement_id for r in results}
    }
    standing = {id_ for id_ in failed if not yielding.get(id_)}
    displaced = {}
    for requirement_id, yielded in yielding.items():
        if not yielded:
            continue
        reach = set(yielded)
        for other in yielded:  # through one that yielded in turn
            reach |= set(requirements[other].yields_to)
        displaced[requirement_id] = (reach & standing) or yielded
    kept = [r for r in results if r.requirement_id not in displaced]
    return Settled(kept, displaced)
