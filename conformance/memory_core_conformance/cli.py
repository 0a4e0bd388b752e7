"""``memory-core check URL``: registered by this distribution in the
``memory_core.cli`` entry-point group (see :mod:`memory_core.cli.host`).

Only typer and the core's registry are imported here; pytest and the suite
load when the command runs, so listing ``memory-core --help`` stays cheap.
"""

from __future__ import annotations

from typing import Annotated

import typer

from memory_core.cli.host import user_errors
from memory_core.registry import storage_class

__all__ = ["check"]


def check(
    url: Annotated[str, typer.Argument(help="Storage URL of the deployment to check.")],
) -> None:
    """Run the conformance suite against a live deployment (its own namespace).

    The URL's scheme is checked first, then the deployment is opened once
    (``run_check``'s probe): a bad URL or an unreachable or unwritable backend
    is one red line and exit 2, before any test runs."""
    with user_errors():
        storage_class(url)
        from memory_core_conformance.check import run_check

        code = run_check(url)
    raise typer.Exit(code)
