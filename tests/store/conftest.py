"""tests/store runs on "sqlite" and "postgres" (the `backend` fixture of tests/conftest.py); its servers are
tests/backends.py's."""
