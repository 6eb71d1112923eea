"""Applications that embed relayline (each folder has a README)."""
