"""The command line (``moe-planner``, ``python -m cli``): :func:`cli.main.main`."""
