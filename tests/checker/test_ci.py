"""Ready CI: the GitHub Action and the GitLab template say what they promise and are valid
against their published schemas (check-jsonschema's copies, offline), and their steps
(`install.sh`, `check.sh`, `attest.sh` in ci-templates/) run here as a runner runs them:
variables set the way the action sets them (a blank input is an empty variable), GITHUB_OUTPUT and
GITHUB_STEP_SUMMARY files, against the reference and a faulty double, in the smoke profile
(about a second each). GitHub's actions/attest itself runs only on GitHub."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from cryptography.hazmat.primitives.asymmetric import ed25519

from conformance.options import OPTIONS
from conformance.reports import attestation
from conformance.spec import catalogue
from tests.checker.test_attestation import KeyPair
from tests.checker.test_command import Finished as CommandFinished
from tests.checker.test_command import assert_no_key_anywhere, new_key
from tests.shared.double import running_double
from tests.shared.servers import reference_args, start_reference

ROOT = Path(__file__).resolve().parents[2]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
GITLAB = yaml.safe_load((ROOT / "ci-templates" / "gitlab-ci.yml").read_text(encoding="utf-8"))
INSTALL_TIMEOUT = 900  # pip took over 300 s beside a second test run
CHECK_TIMEOUT = 60
FAULT, FAULT_ID = "no-www-authenticate", "AUTH-WWW-AUTHENTICATE"


def check_step() -> dict:
    [step] = [s for s in ACTION["runs"]["steps"] if s.get("id") == "check"]
    return step


def test_the_action_is_composite_with_the_promised_inputs():
    assert ACTION["runs"]["using"] == "composite"
    inputs = ACTION["inputs"]
    for name in ("base-url", "api-key", "spare-api-key", "plan", "profile", "expected-failures"):
        assert name in inputs and inputs[name]["description"]
    assert "secret" in inputs["api-key"]["description"]
    assert set(ACTION["outputs"]) == {"verdict", "exit-status"}


HISTORY_VARIABLES = {"PSC_HISTORY_NIGHTS", "PSC_HISTORY_DIR", "PSC_HISTORY_OUT"}
"""What ci-templates/history.sh reads: no option of the checker's."""


def test_every_input_reaches_the_checker_through_its_variable():
    environment = check_step()["env"]
    passed = {}
    for variable, value in environment.items():
        [name] = re.match(r"\$\{\{ inputs\.([\w-]+) \}\}", value).groups()
        passed[name] = variable
        assert name in ACTION["inputs"]
        assert variable in {option.environment for option in OPTIONS} | HISTORY_VARIABLES
    assert passed["history"] == "PSC_HISTORY_NIGHTS"
    assert passed["api-key"] == "PETSTORE_API_KEY"
    assert passed["expected-failures"] == "PETSTORE_EXPECTED_FAILURES"


def test_the_steps_are_the_repository_scripts_and_the_reports_are_kept():
    runs = [s["run"] for s in ACTION["runs"]["steps"] if "run" in s]
    assert runs == [
        'bash "$GITHUB_ACTION_PATH/ci-templates/install.sh"',
        'bash "$GITHUB_ACTION_PATH/ci-templates/check.sh"',
        'bash "$GITHUB_ACTION_PATH/ci-templates/attest.sh"',
        'cp "$BUNDLE" "$REPORT_DIR/conformance.sigstore.json"',
    ]
    [upload, history] = [
        s for s in ACTION["runs"]["steps"] if "upload-artifact" in s.get("uses", "")
    ]
    assert upload["if"] == "always()"
    assert upload["with"]["path"] == "${{ inputs.report-dir }}"
    assert history["with"]["path"] == check_step()["env"]["PSC_HISTORY_OUT"]


def test_the_history_input_keeps_the_nights_in_the_cache_whatever_the_verdict():
    """Restored before the check, saved after it even when it failed (a failing night is part
    of the history), under a key of its own each run and found again by its prefix; the page
    kept as an artifact of its own, beside the reports' (a signed report folder holds only
    what was signed)."""
    assert ACTION["inputs"]["history"]["default"] == "0"
    steps = ACTION["runs"]["steps"]
    uses = [s.get("uses", "").split("@")[0] for s in steps]
    restore, save = (
        steps[uses.index("actions/cache/restore")],
        steps[uses.index("actions/cache/save")],
    )
    check = steps.index(check_step())
    assert uses.index("actions/cache/restore") < check < uses.index("actions/cache/save")
    assert "inputs.history != '0'" in restore["if"] and save["if"].startswith("always() && ")
    assert restore["with"]["path"] == save["with"]["path"] == "${{ inputs.history-dir }}"
    assert check_step()["env"]["PSC_HISTORY_DIR"] == "${{ inputs.history-dir }}"
    assert restore["with"]["key"] == save["with"]["key"]
    assert "github.run_id" in save["with"]["key"]
    assert save["with"]["key"].startswith(restore["with"]["restore-keys"])
    [page] = [s for s in steps if s.get("with", {}).get("name", "").endswith("-history")]
    assert page["if"] == save["if"] and page["uses"].startswith("actions/upload-artifact@")


def test_the_attest_input_hands_the_runs_statement_to_actions_attest():
    """After the check, whatever its verdict: the Statement's subjects and predicate, as the
    step before prepared them, with the test-result predicate type."""
    assert ACTION["inputs"]["attest"]["default"] == "false"
    assert "id-token" in ACTION["inputs"]["attest"]["description"]
    steps = ACTION["runs"]["steps"]
    names = [s.get("id") or s.get("uses", "").split("@")[0] for s in steps]
    prepare, attest = steps[names.index("statement")], steps[names.index("attest")]
    assert names.index("check") < names.index("statement") < names.index("attest")
    assert attest["uses"].startswith("actions/attest@")
    assert prepare["run"].endswith('ci-templates/attest.sh"')
    for step in (prepare, attest):
        assert "always()" in step["if"] and "inputs.attest == 'true'" in step["if"]
    assert "steps.statement.outputs.predicate-path != ''" in attest["if"]
    assert attest["with"] == {
        "subject-checksums": "${{ steps.statement.outputs.subject-checksums }}",
        "predicate-type": attestation.PREDICATE_TYPE,
        "predicate-path": "${{ steps.statement.outputs.predicate-path }}",
    }


def test_the_attestation_bundle_is_kept_with_the_reports(tmp_path):
    """actions/attest's bundle is copied into the report folder before it is uploaded, so that
    a certification body checks it offline (`gh attestation verify --bundle`); the step's
    script runs here as a runner runs it, its inputs through the environment, never inlined."""
    steps = ACTION["runs"]["steps"]
    names = [s.get("id") or s.get("uses", "").split("@")[0] for s in steps]
    [keep] = [s for s in steps if "BUNDLE" in s.get("env", {})]
    assert names.index("attest") < steps.index(keep) < names.index("actions/upload-artifact")
    assert keep["if"] == "always() && steps.attest.outputs.bundle-path != ''"
    assert keep["env"]["BUNDLE"] == "${{ steps.attest.outputs.bundle-path }}"
    assert "${{" not in keep["run"]
    bundle, reports = tmp_path / "attestation.json", tmp_path / "reports"
    bundle.write_text('{"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json"}')
    reports.mkdir()
    environment = {**os.environ, "BUNDLE": str(bundle), "REPORT_DIR": str(reports)}
    subprocess.run(["bash", "-c", keep["run"]], env=environment, check=True, timeout=CHECK_TIMEOUT)
    assert (reports / "conformance.sigstore.json").read_bytes() == bundle.read_bytes()


def schema_errors(path: Path, schema: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, str(path)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=CHECK_TIMEOUT,
    )


def as_is(document: dict) -> dict:
    return document


def visible(template: dict) -> dict:
    """The hidden job as a job of its own, as the user's job that extends it runs: the schema
    lets hidden keys hold anything, and checks a job's contents."""
    return {"petstore-conformance": template[".petstore-conformance"]}


def broken_action(action: dict) -> dict:
    """A run step without its shell, which a composite action must name."""
    del next(s for s in action["runs"]["steps"] if "run" in s)["shell"]
    return action


def broken_gitlab(template: dict) -> dict:
    job = visible(template)
    job["petstore-conformance"]["artifacts"]["when"] = "sometimes"
    return job


def workflow(document: dict) -> dict:
    """The workflow as GitHub reads it: YAML 1.1 reads the key `on` as true, and the copy
    written back must say `on` again."""
    if True in document:
        document["on"] = document.pop(True)
    return document


def broken_workflow(document: dict) -> dict:
    """The register job without the machine it runs on."""
    document = workflow(document)
    del document["jobs"]["register"]["runs-on"]
    return document


@pytest.mark.parametrize(
    ("path", "schema", "shown", "broken"),
    [
        ("action.yml", "vendor.github-actions", as_is, broken_action),
        ("ci-templates/gitlab-ci.yml", "vendor.gitlab-ci", visible, broken_gitlab),
        ("ci-templates/certify-matrix.yml", "vendor.github-workflows", workflow, broken_workflow),
    ],
)
def test_the_ci_files_are_valid_against_their_published_schemas(
    path, schema, shown, broken, tmp_path
):
    checked = schema_errors(ROOT / path, schema)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    copies = {}
    for label, change in (("shown", shown), ("broken", broken)):
        copies[label] = tmp_path / f"{label}-{Path(path).name}"
        document = change(yaml.safe_load((ROOT / path).read_text(encoding="utf-8")))
        copies[label].write_text(yaml.safe_dump(document), encoding="utf-8")
    checked = schema_errors(copies["shown"], schema)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # The check can fail: a copy with a mistake a person could make is refused.
    refused = schema_errors(copies["broken"], schema)
    assert refused.returncode == 1, refused.stdout + refused.stderr


def test_the_gitlab_template_runs_the_same_scripts_and_keeps_the_reports():
    job = GITLAB[".petstore-conformance"]
    script = "\n".join(job["script"])
    assert "ci-templates/install.sh" in script and "ci-templates/check.sh" in script
    report_dir = job["variables"]["PETSTORE_REPORT_DIR"]
    assert job["artifacts"]["when"] == "always"
    assert f"{report_dir}/" in job["artifacts"]["paths"]
    assert job["artifacts"]["reports"]["junit"] == f"{report_dir}/junit.xml"
    for secret in ("PETSTORE_API_KEY", "PETSTORE_SPARE_API_KEY", "PETSTORE_SIGN_KEY"):
        assert secret not in job["variables"], "keys belong in masked CI/CD variables"
    # The last nights in the cache, kept whatever the verdict; their page with the artifacts.
    assert int(job["variables"]["PSC_HISTORY_NIGHTS"]) > 1
    assert job["variables"]["PSC_HISTORY_DIR"] + "/" in job["cache"]["paths"]
    assert job["cache"]["when"] == "always"
    assert job["variables"]["PSC_HISTORY_OUT"] + "/" in job["artifacts"]["paths"]


# -- the scripts, run -------------------------------------------------------------------------


@dataclass
class StepRun:
    finished: CommandFinished
    outputs: dict[str, str]
    summary: str


def action_environment(tmp_path: Path, **inputs: str) -> dict[str, str]:
    """What the action's check step sees: every input as its variable, blank ones empty."""
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PETSTORE_", "PYTEST_", "GITHUB_", "PSC_"))
    }
    environment |= {variable: "" for variable in check_step()["env"]}
    environment |= {"PETSTORE_PLAN": "free", "PETSTORE_REPORT_DIR": "petstore-conformance-reports"}
    environment |= inputs
    environment |= {
        "RUNNER_TEMP": str(tmp_path / "runner-temp"),
        "GITHUB_OUTPUT": str(tmp_path / "github-output"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "step-summary"),
        # This interpreter's scripts first: the installed `petstore-conformance`.
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    (tmp_path / "runner-temp").mkdir(exist_ok=True)
    return environment


def run_step(script: str, tmp_path: Path, environment: dict, timeout: float) -> StepRun:
    process = subprocess.run(
        ["bash", str(ROOT / "ci-templates" / script)],
        cwd=tmp_path,
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    finished = CommandFinished(process.returncode, process.stdout, process.stderr, tmp_path)
    output_file = Path(environment["GITHUB_OUTPUT"])
    lines = output_file.read_text().splitlines() if output_file.exists() else []
    summary_file = Path(environment["GITHUB_STEP_SUMMARY"])
    summary = summary_file.read_text() if summary_file.exists() else ""
    return StepRun(finished, dict(line.split("=", 1) for line in lines), summary)


@pytest.fixture
def reference(tmp_path) -> tuple[str, str, str]:
    keys = (new_key("main"), new_key("spare"))
    server = start_reference(reference_args([f"{k}:free" for k in keys], minute_seconds=3))
    yield server.base_url, *keys
    server.stop()


def test_the_check_step_on_the_reference_is_green_with_outputs_and_a_summary(reference, tmp_path):
    base_url, main, spare = reference
    environment = action_environment(
        tmp_path,
        PETSTORE_BASE_URL=base_url,
        PETSTORE_API_KEY=main,
        PETSTORE_SPARE_API_KEY=spare,
        PETSTORE_PROFILE="smoke",
        PETSTORE_PREVIOUS="previous/conformance.json",  # the first night: not there yet
    )
    step = run_step("check.sh", tmp_path, environment, CHECK_TIMEOUT)

    assert step.finished.status == 0, step.finished.describe()
    assert step.outputs == {"verdict": "conformant", "exit-status": "0"}
    assert step.summary.startswith("### Pet Store conformance: conformant (exit 0)")
    assert "no previous statement at previous/conformance.json yet" in step.finished.stdout
    assert (tmp_path / "petstore-conformance-reports" / "report.html").is_file()
    assert_no_key_anywhere(step.finished, (main, spare))

    # The `attest` input's step on the same reports: what actions/attest is handed.
    prepared = run_step("attest.sh", tmp_path, environment, CHECK_TIMEOUT)
    assert prepared.finished.status == 0, prepared.finished.describe()
    assert_attest_inputs_are_the_statement(
        prepared.outputs, tmp_path / "petstore-conformance-reports"
    )


def assert_attest_inputs_are_the_statement(outputs: dict[str, str], report_dir: Path) -> None:
    """The predicate file is the Statement's predicate, and the checksums file names every
    report with its sha256, as sha256sum writes them."""
    predicate = json.loads(Path(outputs["predicate-path"]).read_text(encoding="utf-8"))
    assert predicate == attestation.make_statement(report_dir)["predicate"]
    assert predicate["result"] == "PASSED" and predicate["passedTests"]
    lines = Path(outputs["subject-checksums"]).read_text(encoding="utf-8").splitlines()
    named = dict(reversed(line.split("  ", 1)) for line in lines)
    assert set(named) == {
        "conformance.json",
        "report.html",
        "junit.xml",
        "exchanges.har",
        "badge.svg",
    }
    for name, digest in named.items():
        assert digest == hashlib.sha256((report_dir / name).read_bytes()).hexdigest(), name


def test_the_gitlab_key_based_path_signs_and_the_job_verifies(reference, tmp_path):
    """PETSTORE_SIGN_KEY (a File variable: a path) signs the run that check.sh starts; the
    template's own verify line then holds with the vendor's public key and not with another."""
    base_url, main, spare = reference
    vendor = KeyPair.write(tmp_path, "vendor", ed25519.Ed25519PrivateKey.generate())
    other = KeyPair.write(tmp_path, "other", ed25519.Ed25519PrivateKey.generate()).public
    private, public = vendor.private, vendor.public
    inputs = {
        "PETSTORE_BASE_URL": base_url,
        "PETSTORE_API_KEY": main,
        "PETSTORE_SPARE_API_KEY": spare,
        "PETSTORE_PROFILE": "smoke",
        "PETSTORE_SIGN_KEY": str(private),
    }
    environment = action_environment(tmp_path, **inputs)
    step = run_step("check.sh", tmp_path, environment, CHECK_TIMEOUT)
    assert step.finished.status == 0, step.finished.describe()
    report_dir = tmp_path / "petstore-conformance-reports"
    assert (report_dir / attestation.ENVELOPE).is_file()
    for secret in vendor.secrets():
        assert secret not in step.finished.output

    [verify_line] = [line for line in GITLAB[".petstore-conformance"]["script"] if "verify" in line]
    venv = tmp_path / "venv"  # PSC_VENV as the template's install made it
    (venv / "bin").mkdir(parents=True)
    checker = venv / "bin" / "petstore-conformance"
    checker.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m conformance.cli "$@"\n')
    checker.chmod(0o755)
    statuses = {}
    for label, key in (("vendor", public), ("other", other)):
        job = {**environment, "PSC_VENV": str(venv), "PSC_PUBLIC_KEY": str(key)}
        process = subprocess.run(
            ["bash", "-c", verify_line],
            cwd=tmp_path,
            env=job,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=CHECK_TIMEOUT,
        )
        statuses[label] = process.returncode
    assert statuses == {"vendor": 0, "other": 1}


def test_the_check_step_fails_the_job_on_a_new_failure_and_not_on_an_expected_one(tmp_path):
    key = new_key("main")
    known = tmp_path / "known.yaml"
    known.write_text(f"expected_failures:\n  - id: {FAULT_ID}\n    reason: OPS-123\n")
    with running_double([f"{key}:free"], faults=[FAULT]) as base_url:
        inputs = {
            "PETSTORE_BASE_URL": base_url,
            "PETSTORE_API_KEY": key,
            "PETSTORE_PROFILE": "smoke",
        }
        failing = run_step(
            "check.sh", tmp_path, action_environment(tmp_path, **inputs), CHECK_TIMEOUT
        )
        (tmp_path / "github-output").unlink()
        inputs |= {"PETSTORE_EXPECTED_FAILURES": str(known), "PETSTORE_PACKAGE": "evidence.zip"}
        excused = run_step(
            "check.sh", tmp_path, action_environment(tmp_path, **inputs), CHECK_TIMEOUT
        )

    assert failing.finished.status == 1, failing.finished.describe()
    assert failing.outputs == {"verdict": "not conformant", "exit-status": "1"}
    assert excused.finished.status == 0, excused.finished.describe()
    assert excused.outputs == {"verdict": "not conformant", "exit-status": "0"}
    assert f"- Expected failures: {FAULT_ID}" in excused.summary
    # The summary's words agree with the exit status (the job summary holds both steps).
    assert "### Pet Store conformance: not conformant, every failure expected (exit 0)" in (
        excused.summary
    )
    assert (tmp_path / "evidence.zip").is_file()
    assert_no_key_anywhere(excused.finished, (key,))


def test_a_statement_left_by_an_earlier_run_does_not_speak_for_a_run_that_wrote_none(tmp_path):
    old = tmp_path / "petstore-conformance-reports" / "conformance.json"
    old.parent.mkdir()
    old.write_text('{"verdict": "conformant"}')
    inputs = {"PETSTORE_BASE_URL": "not a url", "PETSTORE_API_KEY": "k"}
    environment = action_environment(tmp_path, **inputs)
    step = run_step("check.sh", tmp_path, environment, CHECK_TIMEOUT)
    assert step.finished.status == 2, step.finished.describe()
    assert step.outputs == {"verdict": "no verdict", "exit-status": "2"}
    # Nor is it attested: GitHub would sign an earlier run's results as this job's.
    prepared = run_step("attest.sh", tmp_path, environment, CHECK_TIMEOUT)
    assert prepared.finished.status == 0, prepared.finished.describe()
    assert "nothing to attest" in prepared.finished.stdout
    assert "predicate-path" not in prepared.outputs


@pytest.mark.slow
def test_the_install_step_then_the_check_step_as_a_runner_runs_them(reference, tmp_path):
    """A fresh virtual environment from this checkout (what the action installs), then the check
    with the checker found there, not on the PATH."""
    base_url, main, _ = reference
    inputs = {"PETSTORE_BASE_URL": base_url, "PETSTORE_API_KEY": main, "PETSTORE_PROFILE": "smoke"}
    environment = action_environment(tmp_path, **inputs)
    environment["GITHUB_PATH"] = str(tmp_path / "github-path")
    # No petstore-conformance on the PATH: the check must find the one the install made.
    environment["PATH"] = os.pathsep.join(
        folder
        for folder in os.environ.get("PATH", "").split(os.pathsep)
        if not (Path(folder) / "petstore-conformance").exists()
    )
    installed = run_step("install.sh", tmp_path, environment, INSTALL_TIMEOUT)
    assert installed.finished.status == 0, installed.finished.describe()
    venv_bin = tmp_path / "runner-temp" / "petstore-conformance-venv" / "bin"
    assert Path(environment["GITHUB_PATH"]).read_text().strip() == str(venv_bin)

    step = run_step("check.sh", tmp_path, environment, CHECK_TIMEOUT)
    assert step.finished.status == 0, step.finished.describe()
    assert step.outputs["verdict"] == "conformant"


MATRIX = yaml.safe_load((ROOT / "ci-templates" / "certify-matrix.yml").read_text(encoding="utf-8"))


def test_the_matrix_signs_one_package_per_target_and_the_last_job_registers_them_all():
    certify, register = MATRIX["jobs"]["certify"], MATRIX["jobs"]["register"]
    [action] = [s for s in certify["steps"] if str(s.get("uses", "")).endswith("conformance@main")]
    assert set(action["with"]) <= set(ACTION["inputs"]), "an input the action does not have"
    assert action["with"]["sign-key"].startswith("${{ runner.temp }}")  # not in the artifact
    assert action["with"]["package"].startswith(ACTION["inputs"]["report-dir"]["default"] + "/")
    assert "${{ matrix.target }}" in action["with"]["package"]
    targets = [entry["target"] for entry in certify["strategy"]["matrix"]["include"]]
    assert len(targets) == len(set(targets)) >= 2
    # A target that fails makes its job red; the action keeps its package whatever the verdict.
    assert certify["strategy"]["fail-fast"] is False and "continue-on-error" not in action
    assert register["needs"] == "certify" and register["if"] == "always()"
    [download] = [s for s in register["steps"] if "download-artifact" in str(s.get("uses"))]
    prefix = action["with"]["artifact-name"].split("$")[0]
    assert download["with"]["pattern"] == prefix + "*"
    [command] = [s["run"] for s in register["steps"] if "register uploads" in str(s.get("run"))]
    assert f"petstore-conformance register {download['with']['path']} " in command


def test_the_action_hands_vendor_implementation_and_sign_key_to_the_checker():
    environment = check_step()["env"]
    assert environment["PETSTORE_VENDOR"] == "${{ inputs.vendor }}"
    assert environment["PETSTORE_IMPLEMENTATION"] == "${{ inputs.implementation }}"
    assert environment["PETSTORE_SIGN_KEY"] == "${{ inputs.sign-key }}"


# -- the nightly example of docs/ci.md, and its history -----------------------------------------


def nightly_example() -> dict:
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    [block] = re.findall(r"```yaml\n(name: nightly conformance\n.*?)```", text, re.DOTALL)
    return workflow(yaml.safe_load(block))


def example_action(document: dict) -> dict:
    [step] = [
        s
        for s in document["jobs"]["conformance"]["steps"]
        if s.get("uses", "").endswith("/petstore-conformance@main")
    ]
    return step


def test_the_nightly_example_is_a_valid_workflow_of_the_actions_own_inputs(tmp_path):
    example = tmp_path / "nightly.yml"
    example.write_text(yaml.safe_dump(nightly_example()), encoding="utf-8")
    checked = schema_errors(example, "vendor.github-workflows")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    broken = nightly_example()
    del broken["jobs"]["conformance"]["runs-on"]
    example.write_text(yaml.safe_dump(broken), encoding="utf-8")
    assert schema_errors(example, "vendor.github-workflows").returncode == 1
    given = example_action(nightly_example())["with"]
    assert set(given) <= set(ACTION["inputs"]) and int(given["history"]) == 30


def example_environment(tmp_path: Path, **overrides: str) -> dict[str, str]:
    """The check step's variables as the action sets them from the example's inputs (defaults
    for the rest), with the target, keys and profile of the test."""
    inputs = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
    inputs |= example_action(nightly_example())["with"] | overrides

    def resolved(value: str) -> str:
        return re.sub(r"\$\{\{ inputs\.([\w-]+) \}\}", lambda m: inputs[m[1]], value)

    variables = {variable: resolved(value) for variable, value in check_step()["env"].items()}
    return action_environment(tmp_path, **variables)


NIGHTLY_FAULTS = [
    {FAULT: FAULT_ID},
    {"error-without-code": "ERR-SCHEMA"},
    {FAULT: FAULT_ID, "error-without-code": "ERR-SCHEMA"},
]


def test_three_nights_of_the_nightly_example_say_failing_since_and_unstable(tmp_path):
    """The example's check step three nights in a row, in one workspace whose history folder
    the cache would carry, against a double whose faults come and go: each night compared with
    the one before, the page beside the reports, and the summary says since when each failure
    fails and which requirement flipped more than once."""
    (tmp_path / ".petstore").mkdir()
    (tmp_path / ".petstore" / "expected-failures.yaml").write_text("expected_failures: []\n")
    keys = (new_key("main"), new_key("spare"))
    steps, times = [], []
    for faults in NIGHTLY_FAULTS:
        for used in ("github-output", "step-summary"):
            (tmp_path / used).unlink(missing_ok=True)
        with running_double([f"{key}:pro" for key in keys], faults=list(faults)) as base_url:
            environment = example_environment(
                tmp_path,
                **{"base-url": base_url, "api-key": keys[0], "spare-api-key": keys[1]},
                profile="smoke",
            )
            steps.append(run_step("check.sh", tmp_path, environment, CHECK_TIMEOUT))
        statement = tmp_path / "petstore-conformance-reports" / "conformance.json"
        times.append(json.loads(statement.read_text(encoding="utf-8"))["time"])
    for step, faults in zip(steps, NIGHTLY_FAULTS, strict=True):
        assert step.finished.status == 1, step.finished.describe()
        assert f"- New failures: {', '.join(sorted(faults.values(), key=order))}" in step.summary
    assert "no previous statement" not in steps[1].finished.output
    assert f"- Regressions since the previous run: {FAULT_ID}" in steps[2].summary

    history = json.loads(
        (tmp_path / "petstore-conformance-reports-history" / "history.json").read_text()
    )
    assert [night["time"] for night in history["nights"]] == times[::-1]
    assert {row["id"]: row["since"] for row in history["failing"]} == {
        FAULT_ID: times[2],
        "ERR-SCHEMA": times[1],
    }
    assert history["unstable"] == [{"id": FAULT_ID, "flips": 2}]
    day = times[2][:10]
    assert f"- Failing since: {FAULT_ID} (since {day}), ERR-SCHEMA (since {times[1][:10]})" in (
        steps[2].summary
    )
    assert (
        f"- Unstable: flipped more than once in 3 nights: {FAULT_ID} (2 flips)" in steps[2].summary
    )
    assert "with the history page of the last 3 nights" in steps[2].summary
    assert (tmp_path / "petstore-conformance-reports-history" / "history.html").is_file()
    assert len(list((tmp_path / ".petstore-history").glob("*.json"))) == 3
    # The signed evidence's folder holds only the reports.
    assert not (tmp_path / "petstore-conformance-reports" / "history.html").exists()
    assert_no_key_anywhere(steps[2].finished, keys)


def order(requirement_id: str) -> int:
    """The catalogue's order, which a statement's failed_requirements follow."""
    return list(catalogue()).index(requirement_id)


def test_the_history_keeps_the_last_nights_only(tmp_path):
    """history.sh with PSC_HISTORY_NIGHTS=2 and three nights kept before: the two newest stay,
    this night one of them, and the page is of those two."""
    kept = tmp_path / "kept"
    kept.mkdir()
    for night in range(3):
        statement = {"time": f"2026-11-0{night + 1}T03:17:00Z", "run_id": f"night-{night}"}
        statement["requirements"] = [{"id": FAULT_ID, "outcome": "passed"}]
        (kept / f"2026110{night}T031700Z-1.json").write_text(json.dumps(statement))
    tonight = tmp_path / "conformance.json"
    tonight.write_text(
        json.dumps(
            {
                "time": "2026-11-04T03:17:00Z",
                "run_id": "tonight",
                "requirements": [{"id": FAULT_ID, "outcome": "failed"}],
            }
        )
    )
    environment = {
        **os.environ,
        "PSC_HISTORY_NIGHTS": "2",
        "PSC_HISTORY_DIR": str(kept),
        "PSC_HISTORY_OUT": str(tmp_path / "page"),
    }
    keep_tonight(tonight, environment, tmp_path)
    history = json.loads((tmp_path / "page" / "history.json").read_text())
    assert [night["run_id"] for night in history["nights"]] == ["tonight", "night-2"]
    assert len(list(kept.glob("*.json"))) == 2
    assert history["failing"] == [{"id": FAULT_ID, "since": "2026-11-04T03:17:00Z"}]
    # Never inside the report folder, whose files are signed: beside it.
    environment |= {"PETSTORE_REPORT_DIR": "reports/", "PSC_HISTORY_OUT": "reports/-history"}
    keep_tonight(tonight, environment, tmp_path)
    assert (tmp_path / "reports-history" / "history.html").is_file()
    assert not (tmp_path / "reports").exists()


def keep_tonight(statement: Path, environment: dict[str, str], cwd: Path) -> None:
    """ci-templates/history.sh as check.sh runs it, with the installed checker."""
    checker = Path(sys.executable).parent / "petstore-conformance"
    process = subprocess.run(
        ["bash", str(ROOT / "ci-templates" / "history.sh"), str(checker), str(statement)],
        env=environment,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=CHECK_TIMEOUT,
    )
    assert process.returncode == 0, process.stdout + process.stderr
