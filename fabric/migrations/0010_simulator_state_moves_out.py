"""The simulated manager's tables move to their own app (`simulated_fabric`, installed with
the simulator): fabric's state forgets them, the tables stay as they are and keep their
names (the app's first migration takes them over)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("fabric", "0009_manager_credentials"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="SimulatedBinding"),
                migrations.DeleteModel(name="SimulatedElement"),
                migrations.DeleteModel(name="SimulatedFabric"),
            ],
            database_operations=[],
        ),
    ]
