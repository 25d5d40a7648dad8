"""Training integrations: a numpy training loop (digits demo) and a PyTorch DDP comm hook."""
