"""What the drivers share: the HTTP client, retries, paging, answer checks, request
builders and locations as catalogs store them."""
