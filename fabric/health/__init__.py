"""Health of the fabric: polling through the drivers, and the alert rules.

- `poll.py`: `health_poll(manager=...)` (one poll, one transaction) and `managers_due()`;
- `readings.py`: readings -> health columns, ChangeRecords, samples, rule decisions;
- `alerting.py`: decisions -> alerts and the rules' memory (`HealthCondition` rows);
- `blast.py`: the blast radius stored on an alert when it opens;
- `conditions.py`: pure (no Django, no database): rule keys, thresholds, conditions;
- `rules.py`: pure: damping, decisions (and the conditions' names, re-exported);
- `wording.py`: pure: an alert in a tenant's words (no element names).
"""
