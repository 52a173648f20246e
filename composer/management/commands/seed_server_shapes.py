"""`manage.py seed_server_shapes`: the server-shape catalogue from Alibaba's PAI machine list."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from composer.counterfactual.machine_spec import RELATIVE, machine_spec_path
from composer.services.server_shapes import server_shapes_seed


class Command(BaseCommand):
    help = (
        "Seed the server-shape catalogue with the distinct machine shapes of "
        f"{RELATIVE} (read where it lies; COMPOSER_SERVER_SHAPES_CSV names another file)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--path", help="The machine list to read instead.")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["path"]) if options.get("path") else machine_spec_path()
        if path is None or not path.is_file():
            where = options.get("path") or f"{RELATIVE} beside the repository or above it"
            self.stdout.write(f"No machine list at {where}: no server shapes seeded.")
            return
        try:
            outcome = server_shapes_seed(path=path)
        except (OSError, ValueError) as exc:
            raise CommandError(f"{path}: {exc}") from exc
        self.stdout.write(
            f"Server shapes from {path}: {len(outcome.added)} added, "
            f"{len(outcome.changed)} updated, {len(outcome.unchanged)} as they were."
        )
