import os
import sys

# Tests run against the source tree (no install needed): `python -m pytest ptf-tests/sai-shim`.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
