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


@pytest.fixture(scope="module")
def digits():
    """The first 192 training and 100 test images of the digits (small training tests)."""
    pytest.importorskip("sklearn")
    from patchassoc.simulations.engines.vit.data import ImageData, load_digits

    d = load_digits()
    return ImageData(d.name, d.x_train[:192], d.y_train[:192], d.x_test[:100], d.y_test[:100],
                     d.n_classes, d.max_value)
