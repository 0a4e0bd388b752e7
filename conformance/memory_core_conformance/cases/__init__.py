"""The suite's case mixins (named ``*Rules``/``*Cases``, never ``Test*``, so
pytest collects them only through an adapter's subclass)."""

from memory_core_conformance.cases.activity import ActivityRules
from memory_core_conformance.cases.bug_cases import BugCases
from memory_core_conformance.cases.capabilities import CapabilityCases
from memory_core_conformance.cases.concurrency import ConcurrencyCases
from memory_core_conformance.cases.faults import FaultCases
from memory_core_conformance.cases.filtering import FilterRules
from memory_core_conformance.cases.lineage import LineageRules
from memory_core_conformance.cases.opening import OpeningCases
from memory_core_conformance.cases.operations import ChunkCases, OperationCases
from memory_core_conformance.cases.ordering import OrderingRules
from memory_core_conformance.cases.paging import PagingRules
from memory_core_conformance.cases.properties import PropertyCases
from memory_core_conformance.cases.recall import RecallCases
from memory_core_conformance.cases.resources import ResourceListingRules
from memory_core_conformance.cases.retention import RetentionRules
from memory_core_conformance.cases.stateful_case import StatefulCases
from memory_core_conformance.cases.two_processes import TwoProcessCases
from memory_core_conformance.cases.values import ValueRules

__all__ = [
    "ActivityRules",
    "BugCases",
    "CapabilityCases",
    "ChunkCases",
    "ConcurrencyCases",
    "FaultCases",
    "FilterRules",
    "LineageRules",
    "OpeningCases",
    "OperationCases",
    "OrderingRules",
    "PagingRules",
    "PropertyCases",
    "RecallCases",
    "ResourceListingRules",
    "RetentionRules",
    "StatefulCases",
    "TwoProcessCases",
    "ValueRules",
]
