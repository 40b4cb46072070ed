"""lance-sync: declarative catalog sync for Lance tables."""

from lance_sync.drivers import register_with_lance_namespace

__version__ = "0.1.0"

register_with_lance_namespace()
