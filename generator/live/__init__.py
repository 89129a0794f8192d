"""`jobhandlers gen-tests --live`: lifecycle tests of a user's own app on a live cluster.

spec.py reads the job description (how to submit and read a job of the app); generate.py
writes the pytest suite; the other modules are what that suite runs against the cluster
(kube.py, helmcli.py, appjobs.py, checks.py, report.py, fixtures.py)."""
