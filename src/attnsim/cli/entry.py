"""The `attnsim` command's entry point: a workflow job the run's job server runs
(`attnsim.cli.server`) is handed over before the command line's parser is even imported (a served
job's own process then costs little more than Python's start); every other command goes to
`attnsim.cli.main`."""

from __future__ import annotations

import os
import sys


def main() -> int:
    if os.environ.get("ATTNSIM_JOB_SERVER"):
        from attnsim.cli import server

        served = server.request(sys.argv[1:])
        if served is not None:
            return served
    from attnsim.cli.main import main as command

    return command()
