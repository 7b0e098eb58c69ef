"""FLOP, MAC and activation counts against hand-computed values."""

import pytest
import timm
import torch
import torch.nn.functional as F
from torch import nn

from joulebench.catalog.counting import count


class TinyConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)  # 8x8 output
        self.bn = nn.BatchNorm2d(8)  # not counted
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        return self.fc(x.mean((2, 3)))


class TinyAttention(nn.Module):
    """Tokens (N=5, dim 8, 2 heads) through qkv, fused attention, proj."""

    def __init__(self, dim=8, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):  # x: (B, 1, N, dim) -> treat as tokens
        x = x[:, 0]
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        x = F.scaled_dot_product_attention(q, k, v)
        return self.proj(x.transpose(1, 2).reshape(b, n, d))


@pytest.mark.parametrize("device", ["meta", "cpu"])
def test_conv_and_linear_by_hand(device):
    with torch.device(device):
        model = TinyConvNet().eval()
    c = count(model, (3, 8, 8), device=device)
    conv_macs = 8 * 8 * 8 * (3 * 3 * 3)  # output elements x kernel volume
    fc_macs = 8 * 10
    assert c.macs == conv_macs + fc_macs
    assert c.flops == 2 * (conv_macs + fc_macs)
    assert c.activations == 8 * 8 * 8 + 10  # conv output + fc output


@pytest.mark.parametrize("device", ["meta", "cpu"])
def test_fused_attention_is_counted(device):
    with torch.device(device):
        model = TinyAttention().eval()
    c = count(model, (1, 5, 8), device=device)
    n, dim, heads, head_dim = 5, 8, 2, 4
    qkv, proj = n * dim * 3 * dim, n * dim * dim
    attention = 2 * heads * n * n * head_dim  # q @ k^T and attn @ v
    assert c.macs == qkv + proj + attention
    acts = n * 3 * dim + n * dim + heads * n * n + heads * n * head_dim
    assert c.activations == acts


def vit_b16_macs_by_hand(tokens=197, dim=768, depth=12, mlp=3072, classes=1000):
    patch = 196 * dim * 3 * 16 * 16
    block = tokens * dim * 3 * dim + tokens * dim * dim + 2 * tokens * dim * mlp
    attention = 2 * tokens * tokens * dim  # all heads together
    return patch + depth * (block + attention) + dim * classes


def test_vit_b16_includes_attention():
    with torch.device("meta"):
        model = timm.create_model("vit_base_patch16_224.augreg2_in21k_ft_in1k").eval()
    c = count(model, (3, 224, 224))
    assert c.macs == vit_b16_macs_by_hand()
    assert c.macs == pytest.approx(17.56e9, rel=1e-3)  # timm's table: 17.58 GMACs (fvcore)
    assert c.activations == pytest.approx(23.9e6, rel=1e-3)


def test_vit_counts_equal_on_meta_and_real_cpu():
    """On a real CPU tensor the fused kernel would be missed; the math kernel counts it."""
    model = timm.create_model("vit_tiny_patch16_224", num_classes=10).eval()
    with torch.device("meta"):
        meta_model = timm.create_model("vit_tiny_patch16_224", num_classes=10).eval()
    cpu = count(model, (3, 224, 224), device="cpu")
    meta = count(meta_model, (3, 224, 224), device="meta")
    assert cpu == meta


def test_resnet50_matches_published_macs():
    with torch.device("meta"):
        model = timm.create_model("resnet50.a1_in1k").eval()
    c = count(model, (3, 224, 224))
    assert c.macs == pytest.approx(4.1e9, rel=0.01)
    assert c.flops == 2 * c.macs
    assert c.activations == pytest.approx(11.11e6, rel=1e-3)  # timm's table: 11.11 M
