"""Real catalog servers started by the test suite on 127.0.0.1 (see README.md here)."""
