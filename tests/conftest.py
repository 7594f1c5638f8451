import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# every chart spec a page builds is validated against the Vega-Lite schema under test (ui/render.py; a served
# page skips it for speed), in this process and in the servers the browser tests start
import os  # noqa: E402

os.environ.setdefault("PLANNER_VALIDATE_CHARTS", "1")
