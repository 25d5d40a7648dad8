"""Engine tests run on both backends (see tests/backend_param.py)."""
from backend_param import engine_backend  # noqa: F401 - an autouse fixture for this directory
