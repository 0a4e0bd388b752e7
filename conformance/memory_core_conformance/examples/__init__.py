"""Complete, tested examples for adapter authors (see conformance/README.md).

- :mod:`~memory_core_conformance.examples.toyfile`: ``ToyFileStorage``, a
  file-backed toy adapter (one file per namespace, ``Capability.PERSISTENT``).
- :mod:`~memory_core_conformance.examples.toyfile_conformance`: the whole
  test module that runs the suite on it, ``storage_reopener`` included.
"""
