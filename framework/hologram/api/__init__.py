"""The turn API's contract, shared by the kernel's side (`hologram.agent`) and the clients."""
