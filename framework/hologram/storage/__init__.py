"""The kernel's SQLite files: opening them with cheap damage checks, their memory bounds, salvage."""
