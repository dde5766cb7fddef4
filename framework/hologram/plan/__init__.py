"""What `hologram build` makes of the manifests, the start-up plan: resolution (`graph`), the lock
itself, explaining it (`diagnostics`), and `hologram check`'s lint of plugin repositories."""
