import re

from django.db import migrations

# Sentences that plans stored before explanations had a tenant's rendering may hold, with
# the fabric internals they name: the tenant's words drop them (as the engine now does).
_TENANT_WORDS = [
    (
        re.compile(r"^(\d+ of \d+ devices sit behind the host's own switch) \(.*?\); (.*)$"),
        r"\1; \2",
    ),
    (re.compile(r"^(.* fit) behind switch .+?; (relax 'same switch' or wait\.)$"), r"\1 behind one switch; \2"),
    (re.compile(r"^(.* are reachable from one host) \(.*?\); (.*)$"), r"\1; \2"),
    (re.compile(r"^The largest free host, .+?, (has .*)$"), r"The largest free host \1"),
    # The host's line: the penalty and the fabric's cores-per-GPU ratio are the operators'.
    (re.compile(r"^(Host .+?: \d+ cores free, \d+ asked); host .*fabric ratio [\d.]+\)\.$"), r"\1."),
]


def _note(sentence):
    """A stored sentence as the engine now writes it: two renderings where they differ."""
    if not isinstance(sentence, str):
        return sentence
    for pattern, tenant in _TENANT_WORDS:
        if pattern.match(sentence):
            return {"operator": sentence, "tenant": pattern.sub(tenant, sentence)}
    return sentence


def split_sentences(apps, schema_editor):
    Composition = apps.get_model("composer", "Composition")
    for composition in Composition.objects.exclude(placement={}).only("pk", "placement").iterator():
        plan = composition.placement
        if not isinstance(plan, dict):
            continue
        changed = dict(plan)
        if isinstance(plan.get("explanation"), list):
            changed["explanation"] = [_note(s) for s in plan["explanation"]]
        if isinstance(plan.get("nearest"), str):
            changed["nearest"] = _note(plan["nearest"])
        if changed != plan:
            Composition.objects.filter(pk=composition.pk).update(placement=changed)


class Migration(migrations.Migration):

    dependencies = [
        ("composer", "0006_composition_live_name"),
    ]

    operations = [
        migrations.RunPython(split_sentences, migrations.RunPython.noop),
    ]
