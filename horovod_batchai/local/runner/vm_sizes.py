"""Azure VM sizes the local service knows: vCPUs, GPUs and memory per node (the runner's nodes
report them; Batch AI's validation, quotas and usages read them).

A local cluster node is a slot on this machine, but it reports the resources of the size it was
asked for: ``AZ_BATCHAI_NUM_GPUS`` and the usage counters come from this table. The figures are
Azure's published ones for each size. Batch AI refused ``Standard_A0`` and the premium-storage
series (DS, DSv2, GS) for clusters; they are listed so that file servers may use them and cluster
creation can say why they are refused.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

__all__ = ["VmSize", "VM_SIZES", "lookup_vm_size", "cluster_size_problem"]


@dataclass(frozen=True)
class VmSize:
    name: str            # canonical spelling, e.g. "Standard_NC6"
    vcpus: int
    gpus: int
    memory_gb: float
    family: str          # quota family as the usages API names it, e.g. "Standard NC Family"
    premium_storage: bool = False


def _sizes() -> list[VmSize]:
    rows: list[tuple[str, int, int, float, str, bool]] = [
        # General purpose, A series
        ("Standard_A0", 1, 0, 0.75, "Standard A0-A7 Family", False),
        ("Standard_A1", 1, 0, 1.75, "Standard A0-A7 Family", False),
        ("Standard_A2", 2, 0, 3.5, "Standard A0-A7 Family", False),
        ("Standard_A3", 4, 0, 7, "Standard A0-A7 Family", False),
        ("Standard_A4", 8, 0, 14, "Standard A0-A7 Family", False),
        ("Standard_A1_v2", 1, 0, 2, "Standard Av2 Family", False),
        ("Standard_A2_v2", 2, 0, 4, "Standard Av2 Family", False),
        ("Standard_A4_v2", 4, 0, 8, "Standard Av2 Family", False),
        ("Standard_A8_v2", 8, 0, 16, "Standard Av2 Family", False),
        # D series (Standard_D1 is the size the recorded CLI scenarios use)
        ("Standard_D1", 1, 0, 3.5, "Standard D Family", False),
        ("Standard_D2", 2, 0, 7, "Standard D Family", False),
        ("Standard_D3", 4, 0, 14, "Standard D Family", False),
        ("Standard_D4", 8, 0, 28, "Standard D Family", False),
        ("Standard_D11", 2, 0, 14, "Standard D Family", False),
        ("Standard_D12", 4, 0, 28, "Standard D Family", False),
        ("Standard_D13", 8, 0, 56, "Standard D Family", False),
        ("Standard_D14", 16, 0, 112, "Standard D Family", False),
        ("Standard_D1_v2", 1, 0, 3.5, "Standard Dv2 Family", False),
        ("Standard_D2_v2", 2, 0, 7, "Standard Dv2 Family", False),
        ("Standard_D3_v2", 4, 0, 14, "Standard Dv2 Family", False),
        ("Standard_D4_v2", 8, 0, 28, "Standard Dv2 Family", False),
        ("Standard_D5_v2", 16, 0, 56, "Standard Dv2 Family", False),
        ("Standard_D11_v2", 2, 0, 14, "Standard Dv2 Family", False),
        ("Standard_D12_v2", 4, 0, 28, "Standard Dv2 Family", False),
        ("Standard_D13_v2", 8, 0, 56, "Standard Dv2 Family", False),
        ("Standard_D14_v2", 16, 0, 112, "Standard Dv2 Family", False),
        ("Standard_D2_v3", 2, 0, 8, "Standard Dv3 Family", False),
        ("Standard_D4_v3", 4, 0, 16, "Standard Dv3 Family", False),
        ("Standard_D8_v3", 8, 0, 32, "Standard Dv3 Family", False),
        ("Standard_D16_v3", 16, 0, 64, "Standard Dv3 Family", False),
        ("Standard_D32_v3", 32, 0, 128, "Standard Dv3 Family", False),
        ("Standard_D64_v3", 64, 0, 256, "Standard Dv3 Family", False),
        # Premium-storage series: file servers only
        ("Standard_DS1", 1, 0, 3.5, "Standard DS Family", True),
        ("Standard_DS2", 2, 0, 7, "Standard DS Family", True),
        ("Standard_DS3", 4, 0, 14, "Standard DS Family", True),
        ("Standard_DS4", 8, 0, 28, "Standard DS Family", True),
        ("Standard_DS1_v2", 1, 0, 3.5, "Standard DSv2 Family", True),
        ("Standard_DS2_v2", 2, 0, 7, "Standard DSv2 Family", True),
        ("Standard_DS3_v2", 4, 0, 14, "Standard DSv2 Family", True),
        ("Standard_DS4_v2", 8, 0, 28, "Standard DSv2 Family", True),
        ("Standard_DS5_v2", 16, 0, 56, "Standard DSv2 Family", True),
        ("Standard_GS1", 2, 0, 28, "Standard GS Family", True),
        ("Standard_GS2", 4, 0, 56, "Standard GS Family", True),
        ("Standard_GS3", 8, 0, 112, "Standard GS Family", True),
        # Compute optimised
        ("Standard_F1", 1, 0, 2, "Standard F Family", False),
        ("Standard_F2", 2, 0, 4, "Standard F Family", False),
        ("Standard_F4", 4, 0, 8, "Standard F Family", False),
        ("Standard_F8", 8, 0, 16, "Standard F Family", False),
        ("Standard_F16", 16, 0, 32, "Standard F Family", False),
        ("Standard_F2s_v2", 2, 0, 4, "Standard FSv2 Family", False),
        ("Standard_F4s_v2", 4, 0, 8, "Standard FSv2 Family", False),
        ("Standard_F8s_v2", 8, 0, 16, "Standard FSv2 Family", False),
        ("Standard_F16s_v2", 16, 0, 32, "Standard FSv2 Family", False),
        ("Standard_F32s_v2", 32, 0, 64, "Standard FSv2 Family", False),
        # GPU: NC (K80), NCv2 (P100), NCv3 (V100), ND (P40), NV (M60)
        ("Standard_NC6", 6, 1, 56, "Standard NC Family", False),
        ("Standard_NC12", 12, 2, 112, "Standard NC Family", False),
        ("Standard_NC24", 24, 4, 224, "Standard NC Family", False),
        ("Standard_NC24r", 24, 4, 224, "Standard NC Family", False),
        ("Standard_NC6s_v2", 6, 1, 112, "Standard NCv2 Family", False),
        ("Standard_NC12s_v2", 12, 2, 224, "Standard NCv2 Family", False),
        ("Standard_NC24s_v2", 24, 4, 448, "Standard NCv2 Family", False),
        ("Standard_NC24rs_v2", 24, 4, 448, "Standard NCv2 Family", False),
        ("Standard_NC6s_v3", 6, 1, 112, "Standard NCv3 Family", False),
        ("Standard_NC12s_v3", 12, 2, 224, "Standard NCv3 Family", False),
        ("Standard_NC24s_v3", 24, 4, 448, "Standard NCv3 Family", False),
        ("Standard_NC24rs_v3", 24, 4, 448, "Standard NCv3 Family", False),
        ("Standard_ND6s", 6, 1, 112, "Standard ND Family", False),
        ("Standard_ND12s", 12, 2, 224, "Standard ND Family", False),
        ("Standard_ND24s", 24, 4, 448, "Standard ND Family", False),
        ("Standard_ND24rs", 24, 4, 448, "Standard ND Family", False),
        ("Standard_NV6", 6, 1, 56, "Standard NV Family", False),
        ("Standard_NV12", 12, 2, 112, "Standard NV Family", False),
        ("Standard_NV24", 24, 4, 224, "Standard NV Family", False),
    ]
    return [VmSize(*row) for row in rows]


#: every known size, keyed by its lower-cased name ("standard_nc6").
VM_SIZES: dict[str, VmSize] = {size.name.lower(): size for size in _sizes()}


def lookup_vm_size(name: str) -> Optional[VmSize]:
    """The size called ``name`` (any casing: the CLI sends ``STANDARD_D1``), or None."""
    return VM_SIZES.get(name.lower()) if isinstance(name, str) else None


def cluster_size_problem(size: VmSize) -> Optional[str]:
    """Why Batch AI refuses ``size`` for cluster nodes, or None when it is allowed."""
    if size.name == "Standard_A0":
        return "Standard_A0 is too small for Batch AI cluster nodes"
    if size.premium_storage:
        return (f"{size.name} is a premium-storage size ({size.family}), which Batch AI clusters do not "
                "support; use the matching non-premium size (e.g. Standard_D2_v2 for Standard_DS2_v2)")
    return None
