"""Per-framework contracts: replica roles, the env each pod gets, and success/failure rules."""
