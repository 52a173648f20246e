"""The server-shape catalogue: seeded from Alibaba's PAI machine list read where it lies
(`seed_server_shapes`), edited by operators in the admin; every change audited."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client, override_settings
from django.urls import reverse

from composer.counterfactual.machine_spec import RELATIVE, machine_shapes, machine_spec_path
from composer.models import ServerShape
from fabric.models import ChangeRecord
from tests.support.shared_data import shared_data

# Five machines of three shapes, as the trace writes them (no header row).
LINES = """\
m1,V100,96,512,8
m2,V100,96,512,8
m3,T4,96,512,2
m4,CPU,96,512,0
m5,V100,96,512,8
"""


def test_the_distinct_shapes_of_a_machine_list_with_their_counts() -> None:
    shapes = machine_shapes(LINES.splitlines())
    assert [(s.name, s.gpu_model, s.gpus, s.cores, s.memory_gib, s.machines) for s in shapes] == [
        ("PAI V100 8x 96c 512 GiB", "V100", 8, 96, 512, 3),
        ("PAI CPU 96c 512 GiB", "", 0, 96, 512, 1),
        ("PAI T4 2x 96c 512 GiB", "T4", 2, 96, 512, 1),
    ]


@pytest.mark.parametrize(
    ("line", "message"),
    [("m1,V100,96,512", "line 1: 4 fields, 5 expected"), ("m1,V100,many,512,8", "numbers")],
)
def test_a_malformed_line_is_named(line: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        machine_shapes([line])


@pytest.mark.django_db
def test_seeding_adds_the_shapes_then_updates_their_counts_audited(tmp_path: Path) -> None:
    listing = tmp_path / "machines.csv"
    listing.write_text(LINES)
    out = StringIO()
    call_command("seed_server_shapes", path=str(listing), stdout=out)
    assert "3 added, 0 updated, 0 as they were" in out.getvalue()
    v100 = ServerShape.objects.get(name="PAI V100 8x 96c 512 GiB")
    assert (v100.gpus, v100.cores, v100.memory_gib, v100.machines) == (8, 96, 512, 3)
    added = ChangeRecord.objects.filter(target_type="servershape", action="added")
    assert added.count() == 3 and {r.source for r in added} == {"seed_server_shapes"}

    listing.write_text(LINES + "m6,V100,96,512,8\n")
    out = StringIO()
    call_command("seed_server_shapes", path=str(listing), stdout=out)
    assert "0 added, 1 updated, 2 as they were" in out.getvalue()
    v100.refresh_from_db()
    assert v100.machines == 4
    changed = ChangeRecord.objects.get(target_type="servershape", action="changed")
    assert changed.changes == {"machines": [3, 4]}


@pytest.mark.django_db
def test_without_the_machine_list_seeding_says_so_and_seeds_nothing(tmp_path: Path) -> None:
    out = StringIO()
    with override_settings(COMPOSER_SERVER_SHAPES_CSV=str(tmp_path / "absent.csv")):
        assert machine_spec_path() is None
        call_command("seed_server_shapes", stdout=out)
    assert "No machine list" in out.getvalue() and "no server shapes seeded" in out.getvalue()
    assert not ServerShape.objects.exists()


@pytest.mark.django_db
def test_a_malformed_list_is_a_command_error_and_seeds_nothing(tmp_path: Path) -> None:
    listing = tmp_path / "machines.csv"
    listing.write_text(LINES + "m6,V100\n")
    with pytest.raises(CommandError, match="line 6"):
        call_command("seed_server_shapes", path=str(listing), stdout=StringIO())
    assert not ServerShape.objects.exists()


@pytest.mark.django_db
def test_the_pai_machine_list_seeds_its_seven_shapes() -> None:
    """Read in place from shared/data/alibaba-gpu-v2020 (beside the repository or above it):
    1,897 machines of seven shapes (the trace's SOURCE.txt)."""
    folder = shared_data("alibaba-gpu-v2020")
    if folder is None or not (folder / RELATIVE.name).is_file():
        pytest.skip(f"Alibaba's PAI machine list is not here: no {RELATIVE} beside the repository")
    with override_settings(COMPOSER_SERVER_SHAPES_CSV=str(folder / RELATIVE.name)):
        call_command("seed_server_shapes", stdout=StringIO())
    shapes = {s.name: s for s in ServerShape.objects.all()}
    assert len(shapes) == 7
    assert sum(s.machines for s in shapes.values()) == 1897
    assert sum(s.machines * s.gpus for s in shapes.values()) == 6742
    assert shapes["PAI P100 2x 64c 512 GiB"].machines == 798
    assert shapes["PAI MISC 8x 96c 512 GiB"].gpu_model == ""  # MISC names no model


@pytest.mark.django_db
def test_a_shape_edited_and_deleted_in_the_admin_is_audited() -> None:
    operator = get_user_model().objects.create_superuser("op", "op@example.com", "pw")
    client = Client(REMOTE_ADDR="203.0.113.9")
    client.force_login(operator)
    form: dict[str, Any] = {
        "name": "DGX",
        "gpu_model": "H100",
        "gpus": "8",
        "cores": "112",
        "memory_gib": "2048",
        "machines": "0",
        "source": "",
    }
    response = client.post(reverse("admin:composer_servershape_add"), form)
    assert response.status_code == 302, response.content
    shape = ServerShape.objects.get(name="DGX")
    bad = client.post(reverse("admin:composer_servershape_add"), form | {"name": "x", "cores": "0"})
    assert bad.status_code == 200 and not ServerShape.objects.filter(name="x").exists()
    client.post(
        reverse("admin:composer_servershape_changelist"),
        {"action": "delete_selected", "_selected_action": [shape.pk], "post": "yes"},
    )
    trail = ChangeRecord.objects.filter(target_type="servershape").order_by("at", "id")
    assert [(r.action, r.actor, r.remote_addr) for r in trail] == [
        ("added", operator, "203.0.113.9"),
        ("deleted", operator, "203.0.113.9"),
    ]
