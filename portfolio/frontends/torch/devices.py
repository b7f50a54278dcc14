"""Device profiles: the figures the cost model prices compute and communication with.

Every figure is a vendor's published peak (dense, no sparsity) or a stated assumption; the costs
are therefore optimistic in absolute terms and meant to rank plans, not to predict a step time to
the percent. Per device: peak FLOP/s by number format, memory bandwidth and capacity, and two
links: within a node (``devices_per_node`` devices: NVLink, or the TPU's inter-chip interconnect)
and between nodes. A mesh's axes are laid out innermost first: an axis whose devices, times those
of every axis inside it, fit in a node uses the node's link, any other axis the network's
(docs/frontends.md, "Costs").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ...errors import ProblemError

GB = 1e9
TERA = 1e12


@dataclass(frozen=True)
class Link:
    """One mesh axis's link: per-device bandwidth in one direction (bytes/s) and the latency of
    one collective step (s)."""

    bandwidth: float
    latency: float


@dataclass(frozen=True)
class Device:
    """A device profile (see the module docstring for where the figures come from)."""

    name: str
    description: str
    flops: dict
    """Peak FLOP/s by number format: ``low`` (bf16/fp16), ``fp32`` (what a float32 matmul gets:
    TF32 on tensor cores where there are any), ``other`` (everything else)."""
    memory_bandwidth: float
    memory_bytes: int
    devices_per_node: int
    intra: Link
    inter: Link
    sources: str

    def peak_flops(self, dtype_name: str) -> float:
        """Peak FLOP/s for a dtype name (``torch.bfloat16`` -> the ``low`` figure)."""
        if "bfloat16" in dtype_name or "float16" in dtype_name:
            return self.flops["low"]
        if "float32" in dtype_name:
            return self.flops["fp32"]
        return self.flops["other"]

    def links(self, mesh_shape: Sequence[int]) -> list[Link]:
        """Each mesh axis's link, outer axis first (see the module docstring)."""
        out: list[Link] = []
        inside = 1
        for size in reversed(mesh_shape):
            inside *= size
            out.append(self.intra if inside <= self.devices_per_node else self.inter)
        return out[::-1]


DEVICES = {
    "h100": Device(
        "h100", "NVIDIA H100 SXM5 80 GB, 8 per node (NVLink 4), 400 Gb/s InfiniBand per GPU",
        {"low": 989 * TERA, "fp32": 495 * TERA, "other": 67 * TERA},
        memory_bandwidth=3350 * GB, memory_bytes=80 * 2**30, devices_per_node=8,
        intra=Link(450 * GB, 3e-6), inter=Link(50 * GB, 10e-6),
        sources="NVIDIA H100 datasheet: 989 TFLOP/s BF16 dense, 495 TF32 dense, 67 FP32, "
                "3.35 TB/s HBM3, NVLink 900 GB/s bidirectional; NDR InfiniBand 400 Gb/s"),
    "a100": Device(
        "a100", "NVIDIA A100 SXM4 80 GB, 8 per node (NVLink 3), 200 Gb/s InfiniBand per GPU",
        {"low": 312 * TERA, "fp32": 156 * TERA, "other": 19.5 * TERA},
        memory_bandwidth=2039 * GB, memory_bytes=80 * 2**30, devices_per_node=8,
        intra=Link(300 * GB, 3e-6), inter=Link(25 * GB, 10e-6),
        sources="NVIDIA A100 datasheet: 312 TFLOP/s BF16 dense, 156 TF32, 19.5 FP32, 2,039 GB/s "
                "HBM2e, NVLink 600 GB/s bidirectional; HDR InfiniBand 200 Gb/s"),
    "tpu-v5e": Device(
        "tpu-v5e", "Google TPU v5e, 256 chips per pod on the inter-chip interconnect (2D torus)",
        {"low": 197 * TERA, "fp32": 197 * TERA / 4, "other": 197 * TERA / 4},
        memory_bandwidth=819 * GB, memory_bytes=16 * 2**30, devices_per_node=256,
        intra=Link(50 * GB, 2e-6), inter=Link(12.5 * GB, 10e-6),
        sources="Google Cloud TPU v5e: 197 TFLOP/s BF16, 819 GB/s HBM2, 16 GB, ICI 1,600 Gb/s "
                "per chip (4 links: 50 GB/s each); fp32 assumed at a quarter of BF16; between "
                "pods the data-centre network, assumed 100 Gb/s"),
    "cpu": Device(
        "cpu", "a two-socket x86 server as one device, 1 per node, 100 Gb/s Ethernet between nodes",
        {"low": 2 * TERA, "fp32": 2 * TERA, "other": 1 * TERA},
        memory_bandwidth=200 * GB, memory_bytes=512 * 2**30, devices_per_node=1,
        intra=Link(100 * GB, 1e-6), inter=Link(12.5 * GB, 20e-6),
        sources="assumed: 2 TFLOP/s (2 x 32 cores, AVX-512 FMA at 2 GHz), 200 GB/s DDR5, "
                "512 GiB, 100 Gb/s Ethernet with 20 us per step"),
}
"""The profiles ``--device`` names."""


def device(name: str) -> Device:
    """The profile of ``name`` (case-insensitive; ``tpu``/``v5e`` for ``tpu-v5e``)."""
    key = name.strip().lower()
    key = {"tpu": "tpu-v5e", "v5e": "tpu-v5e", "tpuv5e": "tpu-v5e"}.get(key, key)
    if key not in DEVICES:
        raise ProblemError(f"device: expected one of {', '.join(DEVICES)}, got {name!r}")
    return DEVICES[key]
