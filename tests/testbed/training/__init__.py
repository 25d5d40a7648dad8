"""Offline training experiments through the stand-ins: the simulated switch (simulate), the
model or the real program over UDP on loopback (networked), and the convergence table (experiment)."""
