"""Reading without changing: drift between the manifest and live catalogs, verification of
the datasets tables point at, discovery of datasets no table registers."""
