"""What the drivers share: the HTTP client, retries, paging, answer checks and request
builders."""
