"""What a row says it was measured with (core.provenance)."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import sys
from joulebench.core.provenance import software
found = software()
assert "timm" not in sys.modules, "software() imported timm"
import timm, torch
assert found["timm_version"] == timm.__version__ and found["torch_version"] == torch.__version__
print("ok")
"""


def test_software_names_timms_version_without_importing_it():
    """A job whose model is not timm's (and an idle job) pays no timm import for a version."""
    done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr[-2000:]
