"""One PyTorch thread for the ViT tests: their matrices are tiny, and on a shared machine
OpenMP threads that wait for each other at every operation make them many times slower."""
import pytest


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
