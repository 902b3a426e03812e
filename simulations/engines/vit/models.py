"""Two small vision transformers that differ only in where the attention logits come from.

Both models read an image as D patch tokens X_1..X_D (flattened p x p patches), embed them as
h_j = E X_j + P_j with a learned positional encoding P in R^{D x dim}, apply ``depth`` pre-norm
blocks

    h <- h + W_O [A^(1) V^(1), ..., A^(H) V^(H)],   V^(h) = LN(h) W_V^(h),
    h <- h + MLP(LN(h)),

then average the tokens (no class token) and classify with a linear head. Per head h (d_k = dim/H):

- content attention (the standard ViT):
  A^(h) = softmax(LN(h) W_Q^(h) (LN(h) W_K^(h))^T / sqrt(d_k)), which depends on the image;
- positional attention: A^(h) = softmax(LN(P) W_Q^(h) (LN(P) W_K^(h))^T / sqrt(d_k)) =
  softmax(P~ W_h P~^T) with W_h = W_Q^(h) W_K^(h)^T / sqrt(d_k) and P~ = LN(P): the logits depend on
  the positional encodings only, so A is the same for every image (SPEC section 2's positional
  attention, one D x D map per head and layer), while the values V still come from the content;
- free positional logits (option ``attention="logits"``): A^(h) = softmax(Q^(h)) with a free
  D x D logit matrix per head and layer (SPEC section 2's "free logits" parameterization);
- uniform attention (control ``attention="uniform"``): A^(h) = 11^T / D, fixed, so every token
  receives the mean of the values and no attention is learned (the values, the output map and
  everything else are trained as in the other models);
- no token mixing (control ``attention="none"``): the attention sub-layer is removed, so each
  block is h <- h + MLP(LN(h)) applied to every token separately: a per-patch MLP (on the patch
  plus its positional encoding) followed by mean pooling. Its recorded "attention" is the
  identity (each token sees only itself).

The widths, depth, heads, MLP, pooling, positional encoding and initialization are shared, so the
comparison isolates the attention. The positional variant has the same parameter count as the
standard one plus one LayerNorm per block (the LN applied to P, which plays the role of the LN the
standard block applies to h, and keeps the initial logits of the same order).

This is a neural-network training in float32 (PyTorch), not one of the toolkit's exact float64
engines; its numbers are statistics over seeds. Initialization draws from an explicit
:class:`torch.Generator`, never the global torch seed.

References
----------
SPEC section 2 (positional attention) and section 6, claim 6.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
from torch import nn

__all__ = ["ATTENTIONS", "INPUT_INDEPENDENT", "ViTConfig", "ViT", "build_model",
           "CNNConfig", "CNN", "build_cnn", "count_parameters"]

#: Attention kinds: the standard content attention, the two positional ones, and the two controls
#: (fixed uniform attention; no token mixing at all).
ATTENTIONS = ("content", "positional", "logits", "uniform", "none")
#: The kinds whose attention does not depend on the image.
INPUT_INDEPENDENT = ("positional", "logits", "uniform", "none")


@dataclass(frozen=True)
class ViTConfig:
    """Architecture of one ViT.

    Parameters
    ----------
    n_patches : int
        Number D of patch tokens.
    patch_dim : int
        Length of a flattened patch (p * p * channels).
    n_classes : int
        Number of output classes.
    dim : int
        Token width.
    depth : int
        Number of transformer blocks.
    heads : int
        Attention heads per block (must divide ``dim``).
    mlp_ratio : int
        Hidden width of the MLP as a multiple of ``dim``.
    attention : {"content", "positional", "logits", "uniform", "none"}
        Where the attention logits come from (see the module docstring).
    """

    n_patches: int
    patch_dim: int
    n_classes: int
    dim: int = 64
    depth: int = 3
    heads: int = 4
    mlp_ratio: int = 2
    attention: str = "content"

    def __post_init__(self) -> None:
        for name in ("n_patches", "patch_dim", "n_classes", "dim", "depth", "heads", "mlp_ratio"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.n_classes < 2:
            raise ValueError(f"n_classes must be >= 2, got {self.n_classes}")
        if self.dim % self.heads:
            raise ValueError(f"heads ({self.heads}) must divide dim ({self.dim})")
        if self.attention not in ATTENTIONS:
            raise ValueError(f"attention must be one of {', '.join(ATTENTIONS)}; "
                             f"got {self.attention!r}")

    def to_dict(self) -> dict:
        return asdict(self)


class _Attention(nn.Module):
    def __init__(self, cfg: ViTConfig):
        super().__init__()
        self.kind = cfg.attention
        self.heads = cfg.heads
        self.d_k = cfg.dim // cfg.heads
        self.n_patches = cfg.n_patches
        if self.kind == "logits":
            self.logits = nn.Parameter(torch.zeros(cfg.heads, cfg.n_patches, cfg.n_patches))
        elif self.kind != "uniform":
            self.qk = nn.Linear(cfg.dim, 2 * cfg.dim)
        if self.kind == "positional":
            self.pos_norm = nn.LayerNorm(cfg.dim)
        self.v = nn.Linear(cfg.dim, cfg.dim)
        self.proj = nn.Linear(cfg.dim, cfg.dim)

    def weights(self, h: torch.Tensor | None, pos: torch.Tensor) -> torch.Tensor:
        """Attention weights: (B, heads, D, D) for content attention, (1, heads, D, D) for the
        positional kinds (one map for every image)."""
        if self.kind == "logits":
            return torch.softmax(self.logits, dim=-1).unsqueeze(0)
        if self.kind == "uniform":
            D = self.n_patches
            return torch.full((1, self.heads, D, D), 1.0 / D, dtype=pos.dtype, device=pos.device)
        src = h if self.kind == "content" else self.pos_norm(pos).unsqueeze(0)
        B, D, _ = src.shape
        q, k = self.qk(src).view(B, D, 2, self.heads, self.d_k).permute(2, 0, 3, 1, 4)
        return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.d_k), dim=-1)

    def forward(self, h: torch.Tensor, pos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        B, D, dim = h.shape
        A = self.weights(h, pos)
        v = self.v(h).view(B, D, self.heads, self.d_k).transpose(1, 2)
        out = (A @ v).transpose(1, 2).reshape(B, D, dim)
        return self.proj(out), A


class _Block(nn.Module):
    def __init__(self, cfg: ViTConfig):
        super().__init__()
        self.mixing = cfg.attention != "none"
        if self.mixing:
            self.norm1 = nn.LayerNorm(cfg.dim)
            self.attn = _Attention(cfg)
        self.heads, self.n_patches = cfg.heads, cfg.n_patches
        self.norm2 = nn.LayerNorm(cfg.dim)
        self.mlp = nn.Sequential(nn.Linear(cfg.dim, cfg.mlp_ratio * cfg.dim), nn.GELU(),
                                 nn.Linear(cfg.mlp_ratio * cfg.dim, cfg.dim))

    def forward(self, h: torch.Tensor, pos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.mixing:
            a, A = self.attn(self.norm1(h), pos)
            h = h + a
        else:  # no token mixing: each token only "attends" to itself
            A = self.identity_map(pos)
        return h + self.mlp(self.norm2(h)), A

    def identity_map(self, pos: torch.Tensor) -> torch.Tensor:
        eye = torch.eye(self.n_patches, dtype=pos.dtype, device=pos.device)
        return eye.expand(1, self.heads, self.n_patches, self.n_patches)


class ViT(nn.Module):
    """A small ViT over patch tokens (see the module docstring for the maths).

    Parameters
    ----------
    cfg : ViTConfig
        The architecture.
    generator : torch.Generator
        Source of every initial weight (truncated normals of std 0.02 for the linear maps and
        the positional encoding, as in the standard ViT; zeros for biases and free logits).
    """

    def __init__(self, cfg: ViTConfig, generator: torch.Generator):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Linear(cfg.patch_dim, cfg.dim)
        self.pos = nn.Parameter(torch.zeros(cfg.n_patches, cfg.dim))
        self.blocks = nn.ModuleList(_Block(cfg) for _ in range(cfg.depth))
        self.norm = nn.LayerNorm(cfg.dim)
        self.head = nn.Linear(cfg.dim, cfg.n_classes)
        self._init(generator)

    @torch.no_grad()
    def _init(self, generator: torch.Generator) -> None:
        # Walk the parameters in a fixed order so one seed gives one set of weights.
        for name, p in self.named_parameters():
            if name.endswith("bias") or name.endswith("logits"):
                p.zero_()
            elif "norm" in name:
                p.fill_(1.0)
            else:
                nn.init.trunc_normal_(p, std=0.02, a=-0.04, b=0.04, generator=generator)

    def forward(self, tokens: torch.Tensor, return_attention: bool = False):
        """Class logits for ``tokens`` of shape (B, D, patch_dim); with ``return_attention``
        also the list (one per block) of attention weights (B or 1, heads, D, D)."""
        if tokens.ndim != 3 or tokens.shape[1:] != (self.cfg.n_patches, self.cfg.patch_dim):
            raise ValueError(f"tokens must have shape (B, {self.cfg.n_patches}, "
                             f"{self.cfg.patch_dim}), got {tuple(tokens.shape)}")
        h = self.embed(tokens) + self.pos
        maps = []
        for block in self.blocks:
            h, A = block(h, self.pos)
            maps.append(A)
        logits = self.head(self.norm(h).mean(dim=1))
        return (logits, maps) if return_attention else logits

    @torch.no_grad()
    def positional_attention(self) -> torch.Tensor:
        """The input-independent attention (depth, heads, D, D) of a positional model, computed
        from its parameters alone (no image involved)."""
        if self.cfg.attention == "content":
            raise ValueError("a content-attention ViT has no input-independent attention")
        return torch.stack([blk.attn.weights(None, self.pos)[0] if blk.mixing
                            else blk.identity_map(self.pos)[0] for blk in self.blocks])


def build_model(cfg: ViTConfig, seed: int | torch.Generator) -> ViT:
    """A freshly initialized :class:`ViT`, its weights drawn from ``seed``."""
    if isinstance(seed, torch.Generator):
        gen = seed
    else:
        gen = torch.Generator().manual_seed(int(seed))
    return ViT(cfg, gen)


def count_parameters(model: nn.Module) -> int:
    """Number of trainable scalars."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


@dataclass(frozen=True)
class CNNConfig:
    """A small convolutional network: the reference of the shuffled-patch experiment (a model
    whose inductive bias is locality on the pixel grid).

    Stage s (s = 0, 1, ...) is a 3 x 3 convolution with ``width * 2**s`` channels, GELU, then a
    2 x 2 max-pooling while the feature map is larger than 4 x 4; a last 3 x 3 convolution, GELU,
    global average pooling and a linear head follow. On 8 x 8 images: conv 32, pool to 4 x 4,
    conv 64, global pool, linear.

    Parameters
    ----------
    channels : int
        Input channels.
    side : int
        Image side (square images).
    n_classes : int
        Number of output classes.
    width : int
        Channels of the first convolution.
    """

    channels: int
    side: int
    n_classes: int
    width: int = 32

    def __post_init__(self) -> None:
        for name in ("channels", "side", "n_classes", "width"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.n_classes < 2:
            raise ValueError(f"n_classes must be >= 2, got {self.n_classes}")

    def to_dict(self) -> dict:
        return asdict(self)


class CNN(nn.Module):
    """The small CNN of :class:`CNNConfig`; weights drawn from ``generator`` (He-normal for the
    convolutions and the head, zero biases)."""

    def __init__(self, cfg: CNNConfig, generator: torch.Generator):
        super().__init__()
        self.cfg = cfg
        layers, c_in, side, width = [], cfg.channels, cfg.side, cfg.width
        while side > 4:
            layers += [nn.Conv2d(c_in, width, 3, padding=1), nn.GELU(), nn.MaxPool2d(2)]
            c_in, width, side = width, 2 * width, side // 2
        layers += [nn.Conv2d(c_in, width, 3, padding=1), nn.GELU(),
                   nn.AdaptiveAvgPool2d(1), nn.Flatten()]
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(width, cfg.n_classes)
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name.endswith("bias"):
                    p.zero_()
                else:
                    nn.init.kaiming_normal_(p, nonlinearity="relu", generator=generator)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """Class logits for ``images`` of shape (B, channels, side, side)."""
        c, n = self.cfg.channels, self.cfg.side
        if images.ndim != 4 or images.shape[1:] != (c, n, n):
            raise ValueError(f"images must have shape (B, {c}, {n}, {n}), got "
                             f"{tuple(images.shape)}")
        return self.head(self.features(images))


def build_cnn(cfg: CNNConfig, seed: int | torch.Generator) -> CNN:
    """A freshly initialized :class:`CNN`, its weights drawn from ``seed``."""
    gen = seed if isinstance(seed, torch.Generator) else torch.Generator().manual_seed(int(seed))
    return CNN(cfg, gen)
