"""prefix-cache: a prefix cache shared across tenants serves one tenant's cached KV blocks to another (a
cache salt that was never set, or never reached the cache key)."""
from kvir.spec.mechanism import Mechanism

MECHANISM = Mechanism(
    name="prefix-cache",
    summary="a prefix cache shared across tenants serves one tenant's cached blocks to another",
    package=__name__,
)
