"""The two ViTs: shapes, parameter parity, seeding, and positional attention that provably does
not depend on the image."""
import pytest

torch = pytest.importorskip("torch")

from patchassoc.simulations.engines.vit.models import ViTConfig, build_model, count_parameters  # noqa: E402

from .tolerances import ROW_SUM_ABS_F32  # noqa: E402

D, PATCH_DIM, CLASSES = 16, 4, 10


def _cfg(attention, **kw):
    return ViTConfig(n_patches=D, patch_dim=PATCH_DIM, n_classes=CLASSES, dim=32, depth=2,
                     heads=4, attention=attention, **kw)


def _two_images(seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, D, PATCH_DIM, generator=g)
    assert not torch.equal(x[0], x[1])
    return x


@pytest.mark.parametrize("attention", ["positional", "logits"])
def test_positional_attention_is_identical_for_two_different_images(attention):
    model = build_model(_cfg(attention), 0)
    # train a few steps so the positional parameters are not at their symmetric start
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(1)
    for _ in range(3):
        x, y = torch.randn(8, D, PATCH_DIM, generator=g), torch.randint(0, CLASSES, (8,),
                                                                         generator=g)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    x = _two_images()
    logits_a, maps_a = model(x[:1], return_attention=True)
    logits_b, maps_b = model(x[1:], return_attention=True)
    assert not torch.equal(logits_a, logits_b)  # the content still matters, through the values
    fixed = model.positional_attention()
    for layer, (a, b) in enumerate(zip(maps_a, maps_b)):
        assert a.shape == (1, 4, D, D)
        assert torch.equal(a, b)
        assert torch.equal(a[0], fixed[layer])
    assert fixed.shape == (2, 4, D, D)
    assert float(fixed.std()) > 0  # not the uniform map: a real, learned pattern


def test_positional_attention_has_no_gradient_with_respect_to_the_input():
    model = build_model(_cfg("positional"), 3)
    x = _two_images().requires_grad_(True)
    _, maps = model(x, return_attention=True)
    grads = torch.autograd.grad(sum(A.square().sum() for A in maps), x, allow_unused=True)[0]
    assert grads is None or float(grads.abs().max()) == 0.0


def test_content_attention_depends_on_the_image():
    model = build_model(_cfg("content"), 0)
    _, maps = model(_two_images(), return_attention=True)
    assert maps[0].shape == (2, 4, D, D)
    assert float((maps[0][0] - maps[0][1]).detach().abs().max()) > 1e-4
    with pytest.raises(ValueError, match="no input-independent"):
        model.positional_attention()


@pytest.mark.parametrize("attention", ["content", "positional", "logits"])
def test_shapes_row_sums_and_seeding(attention):
    x = _two_images()
    a, b, c = (build_model(_cfg(attention), s) for s in (5, 5, 6))
    out, maps = a(x, return_attention=True)
    assert out.shape == (2, CLASSES)
    for A in maps:
        A = A.detach()
        assert float((A.sum(-1) - 1).abs().max()) <= ROW_SUM_ABS_F32
        assert float(A.min()) >= 0
    assert torch.equal(out, b(x))
    assert not torch.equal(out, c(x))
    with pytest.raises(ValueError, match="tokens must have shape"):
        a(torch.zeros(2, D + 1, PATCH_DIM))


def test_same_architecture_and_parameter_counts():
    content = count_parameters(build_model(_cfg("content"), 0))
    positional = count_parameters(build_model(_cfg("positional"), 0))
    logits = count_parameters(build_model(_cfg("logits"), 0))
    dim, depth, heads = 32, 2, 4
    # positional = content + one LayerNorm (weight and bias) on P per block
    assert positional - content == depth * 2 * dim
    # free logits replace the W_Q, W_K map (dim x 2 dim + bias) by heads x D x D logits
    assert logits - content == depth * (heads * D * D - (dim * 2 * dim + 2 * dim))


def test_config_validation():
    with pytest.raises(ValueError, match="must divide"):
        ViTConfig(n_patches=D, patch_dim=4, n_classes=10, dim=30, heads=4)
    with pytest.raises(ValueError, match="attention must be one of"):
        ViTConfig(n_patches=D, patch_dim=4, n_classes=10, attention="cosine")
    with pytest.raises(ValueError, match="n_classes"):
        ViTConfig(n_patches=D, patch_dim=4, n_classes=1)


def test_uniform_attention_is_fixed_and_none_mixes_no_tokens():
    from patchassoc.simulations.engines.vit.models import INPUT_INDEPENDENT

    assert {"uniform", "none"} <= set(INPUT_INDEPENDENT)
    x = _two_images()
    uniform = build_model(_cfg("uniform"), 0)
    _, maps = uniform(x, return_attention=True)
    for A in maps:
        assert A.shape == (1, 4, D, D) and torch.all(A == 1.0 / D)
    assert torch.all(uniform.positional_attention() == 1.0 / D)
    # no token mixing: changing token 0 leaves every other token's final state unchanged
    none = build_model(_cfg("none"), 0)
    states = []
    hook = none.norm.register_forward_hook(lambda m, inp, out: states.append(inp[0].detach()))
    y = x.clone()
    y[:, 0] += 1.0
    with torch.no_grad():
        none(x)
        none(y)
    hook.remove()
    assert torch.equal(states[0][:, 1:], states[1][:, 1:])
    assert not torch.equal(states[0][:, 0], states[1][:, 0])
    assert torch.equal(none.positional_attention(), torch.eye(D).expand(2, 4, D, D))


def test_control_parameter_counts():
    dim, depth = 32, 2
    content = count_parameters(build_model(_cfg("content"), 0))
    qk = dim * 2 * dim + 2 * dim
    # uniform: no W_Q, W_K; none: no attention sub-layer at all (LN, W_Q W_K, W_V, W_O)
    assert content - count_parameters(build_model(_cfg("uniform"), 0)) == depth * qk
    attn = 2 * dim + qk + 2 * (dim * dim + dim)
    assert content - count_parameters(build_model(_cfg("none"), 0)) == depth * attn


def test_small_cnn_shapes_and_seeding():
    from patchassoc.simulations.engines.vit.models import CNNConfig, build_cnn

    cfg = CNNConfig(channels=1, side=8, n_classes=10, width=8)
    x = torch.randn(3, 1, 8, 8, generator=torch.Generator().manual_seed(0))
    a, b, c = build_cnn(cfg, 0), build_cnn(cfg, 0), build_cnn(cfg, 1)
    assert a(x).shape == (3, 10) and torch.equal(a(x), b(x)) and not torch.equal(a(x), c(x))
    # conv 1->8 (3x3), pool to 4x4, conv 8->16, global pool, linear 16->10
    assert count_parameters(a) == (9 * 8 + 8) + (9 * 8 * 16 + 16) + (16 * 10 + 10)
    assert len([m for m in a.modules() if isinstance(m, torch.nn.MaxPool2d)]) == 1
    big = build_cnn(CNNConfig(channels=3, side=32, n_classes=10, width=8), 0)
    assert len([m for m in big.modules() if isinstance(m, torch.nn.MaxPool2d)]) == 3
    with pytest.raises(ValueError, match="images must have shape"):
        a(torch.zeros(3, 1, 4, 4))
    with pytest.raises(ValueError, match="n_classes"):
        CNNConfig(channels=1, side=8, n_classes=1)
