"""p4reduce controller: P4Runtime control plane, jobs and slots, job API, inspection shell.

`python -m p4reduce.controller serve|shell|jobs|slots|registers|counters|entries|groups` (controller/cli.py);
docs/controller.md describes it and docs/job-api.md the HTTP API workers use.
"""
