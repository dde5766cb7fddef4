"""The user's settings file (`<data>/settings.toml`): loading it and rewriting its providers."""
