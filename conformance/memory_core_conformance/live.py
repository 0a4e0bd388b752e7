"""The suite against the deployment named by ``--memory-core-url``.

``memory-core check URL`` runs this module (``pytest <this file>
--memory-core-url URL``), and so can anyone, the way SQLAlchemy's dialect
suite takes ``--dburi``::

    pytest --pyargs memory_core_conformance.live --memory-core-url redis://host:6379/0

Every store lives in its own fresh namespace and is destroyed when its test
ends (see :class:`memory_core_conformance.check.LiveStorages`). Without the
option the tests are skipped.
"""

from __future__ import annotations

import pytest

from memory_core_conformance.check import LiveStorages
from memory_core_conformance.harness import StorageFactory, StorageReopener
from memory_core_conformance.plugin import URL_OPTION
from memory_core_conformance.suite import StorageConformance

__all__ = ["TestLiveDeployment"]


@pytest.fixture(scope="module")
def live_storages(request: pytest.FixtureRequest) -> LiveStorages:
    """Stores of the deployment at ``--memory-core-url``."""
    url = request.config.getoption(URL_OPTION)
    if not url:
        pytest.skip(f"no {URL_OPTION} given: no deployment to check")
    return LiveStorages(str(url))


class TestLiveDeployment(StorageConformance):
    """The whole suite on the live deployment."""

    @pytest.fixture
    def storage_factory(self, live_storages: LiveStorages) -> StorageFactory:
        """New stores, each in a fresh namespace."""
        return live_storages.build

    @pytest.fixture
    def storage_reopener(self, live_storages: LiveStorages) -> StorageReopener:
        """A second instance on a store's namespace."""
        return live_storages.reopen
