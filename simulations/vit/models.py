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
  D x D logit matrix per head and layer (SPEC section 2's "free logits" parameterization).

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

__all__ = ["ATTENTIONS", "ViTConfig", "ViT", "build_model", "count_parameters"]

#: Attention kinds: the standard content attention, and the two positional ones.
ATTENTIONS = ("content", "positional", "logits")


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
    attention : {"content", "positional", "logits"}
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
        if self.kind == "logits":
            self.logits = nn.Parameter(torch.zeros(cfg.heads, cfg.n_patches, cfg.n_patches))
        else:
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
        self.norm1 = nn.LayerNorm(cfg.dim)
        self.attn = _Attention(cfg)
        self.norm2 = nn.LayerNorm(cfg.dim)
        self.mlp = nn.Sequential(nn.Linear(cfg.dim, cfg.mlp_ratio * cfg.dim), nn.GELU(),
                                 nn.Linear(cfg.mlp_ratio * cfg.dim, cfg.dim))

    def forward(self, h: torch.Tensor, pos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a, A = self.attn(self.norm1(h), pos)
        h = h + a
        return h + self.mlp(self.norm2(h)), A


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
        return torch.stack([blk.attn.weights(None, self.pos)[0] for blk in self.blocks])


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
