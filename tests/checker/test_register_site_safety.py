"""Writing the register's site safely (issue 51): a write that fails part-way leaves the last
good register in place and no half-written folder; the register never writes through a
symbolic link and refuses an --out holding one; it replaces only a folder it can prove it
wrote (its log), never one merely holding a file named register.json; a revocation of no
certificate is one line and exit 2; --rejections inside --out is refused. In process, on
packages signed again from one real run (test_register's fixture)."""

# ruff: noqa: F811 - the vendors fixture, imported, is the argument of the tests
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conformance import cli
from conformance.register import writing
from tests.checker.test_register import openssl_key, vendors  # noqa: F401 - vendors: the fixture
from tests.shared import packages


def register(capsys, *args) -> tuple[int, str, str]:
    status = cli.main(["register", *map(str, args)])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def ring(folder: Path, vendors, extra: str = "") -> Path:
    path = folder / "keyring.yaml"
    path.write_text(f"vendors:\n  Acme Pets:\n    keys: [{vendors.acme[1]}]\n{extra}", "utf-8")
    return path


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*")
            if p.is_file()}  # fmt: skip


@pytest.fixture
def site(vendors, tmp_path, capsys) -> Path:
    out = tmp_path / "site"
    assert register(capsys, vendors.acme_zip, "--keyring", ring(tmp_path, vendors),
                    "--out", out)[0] == 0  # fmt: skip
    return out


def test_a_write_failing_part_way_leaves_the_last_register_whole(
    vendors,
    site,
    tmp_path,
    capsys,
    monkeypatch,
):
    before = tree(site)
    newer = packages.signed_variant(vendors.acme_reports, tmp_path / "newer.zip",
                                    vendors.acme[0], tmp_path, run_id="newer")  # fmt: skip
    written = []
    real_put = writing.put

    def failing_put(path: Path, data: bytes) -> None:
        written.append(path)
        if len(written) == 3:  # after some files of the new site, before register.json
            raise OSError(28, "No space left on device", str(path))
        real_put(path, data)

    monkeypatch.setattr(writing, "put", failing_put)
    monkeypatch.setattr("conformance.register.publish.put", failing_put)
    status, _, err = register(capsys, newer, "--keyring", tmp_path / "keyring.yaml",
                              "--out", site)  # fmt: skip
    assert status == 2 and "No space left on device" in err
    assert len(err.strip().splitlines()) == 1 or "packages:" in err
    assert tree(site) == before, "the last good register changed"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".site.")] == []
    monkeypatch.undo()
    assert register(capsys, newer, "--keyring", tmp_path / "keyring.yaml", "--out", site)[0] == 0
    assert len(json.loads((site / "register.json").read_text())["certificates"]) == 2


def test_a_symbolic_link_in_out_is_refused_and_nothing_is_written_through_it(
    vendors,
    site,
    tmp_path,
    capsys,
):
    outside = tmp_path / "outside.txt"
    outside.write_text("the body's own file")
    (site / "certificates" / "planted.html").symlink_to(outside)
    status, _, err = register(capsys, vendors.acme_zip, "--keyring", tmp_path / "keyring.yaml",
                              "--out", site)  # fmt: skip
    assert status == 2 and "planted.html is a symbolic link" in err
    assert outside.read_text() == "the body's own file"
    link = tmp_path / "link-to-site"
    link.symlink_to(site)
    status, _, err = register(capsys, vendors.acme_zip, "--keyring", tmp_path / "keyring.yaml",
                              "--out", link)  # fmt: skip
    assert status == 2 and "a symbolic link" in err


def test_a_folder_merely_holding_a_register_json_is_not_the_registers(
    vendors,
    tmp_path,
    capsys,
):
    foreign = tmp_path / "docs"
    (foreign / "certificates").mkdir(parents=True)
    (foreign / "register.json").write_text("{}")
    (foreign / "certificates" / "mine.html").write_text("mine")
    status, _, err = register(capsys, vendors.acme_zip, "--keyring", ring(tmp_path, vendors),
                              "--out", foreign)  # fmt: skip
    assert status == 2 and "no log.jsonl of this register" in err
    assert (foreign / "certificates" / "mine.html").read_text() == "mine"


def test_a_register_folder_with_a_file_of_someone_else_is_refused(
    vendors,
    site,
    tmp_path,
    capsys,
):
    (site / "notes.txt").write_text("mine")
    status, _, err = register(capsys, "--keyring", tmp_path / "keyring.yaml", "--out", site)
    assert status == 2 and "notes.txt is not a file a register writes" in err
    assert (site / "notes.txt").read_text() == "mine"


def test_a_log_edited_in_out_is_refused(vendors, site, tmp_path, capsys):
    data = (site / "log.jsonl").read_bytes().replace(b"Acme Pets", b"Acme Pest")
    (site / "log.jsonl").write_bytes(data)
    status, _, err = register(capsys, "--keyring", tmp_path / "keyring.yaml", "--out", site)
    assert status == 2 and "register.json" in err and "head differs" in err


def test_a_revocation_of_no_certificate_is_one_line_and_exit_2(
    vendors,
    site,
    tmp_path,
    capsys,
):
    before = tree(site)
    extra = "revoked:\n  - run: never-issued\n    date: 2026-12-01\n    reason: typo\n"
    status, out, err = register(capsys, "--keyring", ring(tmp_path, vendors, extra), "--out", site)
    assert status == 2 and out == ""
    assert err.strip().splitlines() == [
        "petstore-conformance: the keyring revokes run never-issued, which no certificate in "
        "the register is"
    ]
    assert tree(site) == before


def test_rejections_inside_out_are_refused(vendors, tmp_path, capsys):
    site = tmp_path / "site"
    status, _, err = register(capsys, vendors.acme_zip, "--keyring", ring(tmp_path, vendors),
                              "--out", site, "--rejections", site / "rejected.jsonl")  # fmt: skip
    assert status == 2 and "inside --out" in err
    assert not site.exists()


def test_a_register_run_again_with_the_same_uploads_adds_nothing(
    vendors,
    site,
    tmp_path,
    capsys,
):
    before = (site / "log.jsonl").read_bytes()
    status, out, _ = register(capsys, vendors.acme_zip, "--keyring", tmp_path / "keyring.yaml",
                              "--out", site)  # fmt: skip
    assert status == 0 and "0 new of 1 package(s), 1 already registered" in out
    assert (site / "log.jsonl").read_bytes() == before
    assert oct(os.stat(site).st_mode & 0o777) == "0o755"


def test_a_register_json_naming_a_file_outside_the_site_is_refused(vendors, site, tmp_path, capsys):
    document = json.loads((site / "register.json").read_text())
    document["certificates"][0]["page"] = "../../escaped.html"
    (site / "register.json").write_text(json.dumps(document))
    status, _, err = register(capsys, "--keyring", tmp_path / "keyring.yaml", "--out", site)
    assert status == 2 and "entry 1 names a file a register does not write" in err
    assert not (tmp_path / "escaped.html").exists() and not (site.parent / "escaped.html").exists()


def test_a_signed_register_is_extended_only_by_the_bodys_key(vendors, tmp_path, capsys):
    body, stranger = openssl_key(tmp_path, "body")[0], openssl_key(tmp_path, "stranger")[0]
    site, keyring = tmp_path / "site", ring(tmp_path, vendors)
    signed = ["--keyring", keyring, "--out", site, "--body-id", "urn:example:body"]
    assert register(capsys, vendors.acme_zip, *signed, "--sign-key", body)[0] == 0
    before = tree(site)
    status, _, err = register(capsys, *signed, "--sign-key", stranger)
    assert status == 2 and "not proven the body's" in err
    assert tree(site) == before
    assert register(capsys, *signed, "--sign-key", body)[0] == 0
    status, _, err = register(capsys, *signed[:-1], "not a uri", "--sign-key", body)
    assert status == 2 and "not a URI" in err


def test_an_unreadable_policy_is_one_line_and_exit_2(vendors, tmp_path, capsys):
    absent = tmp_path / "absent.yaml"
    status, out, err = register(capsys, vendors.acme_zip, "--keyring", ring(tmp_path, vendors),
                                "--out", tmp_path / "site", "--policy", absent)  # fmt: skip
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "absent.yaml" in err and not (tmp_path / "site").exists()
