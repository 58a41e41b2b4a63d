"""The benchmark of issue 11: the product's processes beside bare baselines, in one run.

``./scripts/bench`` (``python -m bench``) starts the sandbox Slack, the web app and
workers against the real PostgreSQL and Redis and prints every figure of
``docs/benchmarks.md`` beside a baseline measured in the same run. Benchmarks, not
tests: nothing here asserts a timing, and pytest does not collect this package.
"""
