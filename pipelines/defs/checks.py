"""Asset checks (blocking where bad data must not flow downstream)."""
