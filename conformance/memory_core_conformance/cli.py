"""``memory-core check URL``: registered by this distribution in the
``memory_core.cli`` entry-point group (see :mod:`memory_core.cli.host`).

Only typer and the core's registry are imported here; pytest and the suite
load when the command runs, so listing ``memory-core --help`` stays cheap.
"""

from __future__ import annotations

from typing import Annotated

import typer

from memory_core.cli.host import user_errors
from memory_core.cli.stores import url_role
from memory_core.registry import storage_class

__all__ = ["check"]


def check(
    url: Annotated[str, typer.Argument(help="Storage URL of the deployment to check.")],
    profile: Annotated[
        str | None,
        typer.Option(
            help="Hypothesis profile: quick, dev, ci or deep (default: $MEMORY_CORE_HYPOTHESIS_PROFILE or dev)."
        ),
    ] = None,
    keyword: Annotated[
        str | None, typer.Option("-k", "--keyword", help="Run only the tests matching this pytest -k expression.")
    ] = None,
    new: Annotated[
        bool,
        typer.Option("--new", help="The URL names no memory-core store yet (a fresh deployment): check it anyway."),
    ] = False,
) -> None:
    """Run the conformance suite against a live deployment (its own namespaces).

    The URL's scheme is checked first, then the store it names: it must hold
    a memory-core store, as for every command that reads one (a misspelt
    path is refused, not checked as an empty new store), unless ``--new``
    says the deployment holds none yet; a missing folder or a file that is
    not a database fails as connect would, and nothing is created. Then the
    deployment is opened once: each is one red line and exit 2, before any
    test runs. Ctrl-C stops the run with no verdict (exit 130); rules no
    test ran are listed as not run."""
    with user_errors():
        with url_role("URL"):
            storage_class(url)
        from memory_core_conformance.check import run_check

        code = run_check(url, profile=profile, keyword=keyword, new=new)
    raise typer.Exit(code)
