"""Self-heal: replace a degraded composition's lost devices from spares, under its own rules.

`heal_request` (a tenant's "heal now", or `composer.services.health` for compositions whose
spec opts in with `self_heal`) moves the composition DEGRADED -> HEALING, audited with who
and from where, and queues a HEAL job, `composition_heal_run`:

    HEALING: for each lost device: place a spare -> claim it -> bind it
             -> verify -> unbind and release the lost device -> READY
    HEALING -> DEGRADED  when no spare exists (the reason names what was looked for and the
                         nearest alternative) or the replacement failed and was rolled back

Devices that fail while the heal runs are replaced too (up to HEAL_ROUNDS passes). A heal
whose worker died is queued again by the periodic reconcile (`heal_reconcile`) and resumes.

A spare is placed by the placement engine on the usual snapshot, with the host fixed and
one item (the lost device's kind, model and attribute minima; a CXL slice of the same GiB;
an NVMe drive of at least the same capacity), the spec's latency ceiling, isolation and
pool; the failure-domain rules are made to hold against the devices the composition keeps
by taking the spares that would break them out of the snapshot first (spread: not in an
enclosure or behind a switch the item's other devices use; same switch: behind the switch
the others share). It is claimed with the database safety of a request
(`allocations_claim`, under the placement lock), and re-placed once on a lost race.

A lost share of a GPU is replaced by a share of the same size (the engine's share
placement: a GPU already shared on the host with the share free first, else a whole free one
broken into shares; never one the composition holds a share of already). Its GPU is bound
by the first share bound on it and recorded by the others (`share_bindings.shares_bind`);
the failed GPU gives each composition's share back as it is healed and is unbound with the
last (`share_bindings.allocation_unbind_release`), and a rollback never unbinds a GPU
another composition still shares.

Every step is recorded before the next, so a retried or redelivered job resumes and never
binds twice: the claimed replacement is written in `Composition.placement["healing"]` in
the same transaction as the claim, a binding's id is committed on its Allocation at once,
and the swap (release the lost device, update the plan) is one transaction.

Rule 2 and the lost device's binding: the replacement is bound and verified *before* the
lost device is unbound. That unbind may fail (the manager cannot reach a failed device).
The lost device's allocation is then released in the database anyway, so the composition
is whole again and stops counting the device, but nothing is forgotten: its binding id is
kept in an `UnbindPending` row (shown on the page), which holds the device instead (it
stays FAILED/BOUND, its GiB counted, so no claim can take it: claims need FREE), and the
reconciler (`composer.services.reconcile`) retries the unbind until the manager confirms,
then frees the device. Recorded, and undone later: never orphaned.
"""

from __future__ import annotations

from composer.services.heal.common import HEALING_KEY, HealRejected
from composer.services.heal.job import composition_heal_run, heal_reconcile, heal_request
from composer.services.heal.spares import pick_words, snapshot_without, spare_exclusions

__all__ = [
    "HEALING_KEY",
    "HealRejected",
    "composition_heal_run",
    "heal_reconcile",
    "heal_request",
    "pick_words",
    "snapshot_without",
    "spare_exclusions",
]
