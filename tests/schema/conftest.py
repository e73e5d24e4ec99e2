"""Fixtures for the schema catalog tests."""

import pytest

from .helpers import Catalog, keyspace_catalog


@pytest.fixture
def cat() -> Catalog:
    """A catalog with keyspace ks (SimpleStrategy, RF 1)."""
    return keyspace_catalog()
