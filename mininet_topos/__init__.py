"""mininet_topos."""
