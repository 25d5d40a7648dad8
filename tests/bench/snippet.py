"""Helper process for test_hostrun: runs the Python code given as its only argument."""
import sys

exec(sys.argv[1])
