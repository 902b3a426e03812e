"""The start of a child interpreter that cannot import torch, as on a machine without the
``vit`` extra: a meta-path finder refuses ``torch`` and its submodules before anything imports
them. Tests append the code that must run without torch to :data:`PRELUDE`."""

PRELUDE = """
import importlib.abc, sys
class _NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError("No module named 'torch'", name="torch")
sys.meta_path.insert(0, _NoTorch())
"""
