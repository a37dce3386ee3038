"""VM sizes an AmlCompute cluster can have, known before any request is sent.

A size Azure has retired is refused with that reason; a size neither listed nor retired is
refused as unknown. The list holds the general-purpose and GPU families Azure ML offered when
this package was tested (a newer size needs adding here: the check runs before any request,
so it cannot ask the service).
"""
from __future__ import annotations

from ..._models.errors import InvalidSpecError

__all__ = ["check_amlcompute_vm_size", "canonical_vm_size", "GPU_SIZES", "CPU_SIZES", "RETIRED_SIZES"]

GPU_SIZES = (
    # NCv3 (V100)
    "Standard_NC6s_v3", "Standard_NC12s_v3", "Standard_NC24s_v3", "Standard_NC24rs_v3",
    # NCasT4_v3 (T4)
    "Standard_NC4as_T4_v3", "Standard_NC8as_T4_v3", "Standard_NC16as_T4_v3", "Standard_NC64as_T4_v3",
    # NC A100 v4, NC H100 v5
    "Standard_NC24ads_A100_v4", "Standard_NC48ads_A100_v4", "Standard_NC96ads_A100_v4",
    "Standard_NC40ads_H100_v5", "Standard_NC80adis_H100_v5",
    # ND
    "Standard_ND40rs_v2", "Standard_ND96asr_v4", "Standard_ND96amsr_A100_v4", "Standard_ND96isr_H100_v5",
    # NV
    "Standard_NV12s_v3", "Standard_NV24s_v3", "Standard_NV48s_v3",
    "Standard_NV6ads_A10_v5", "Standard_NV12ads_A10_v5", "Standard_NV18ads_A10_v5", "Standard_NV36ads_A10_v5",
)
CPU_SIZES = (
    "Standard_DS1_v2", "Standard_DS2_v2", "Standard_DS3_v2", "Standard_DS4_v2", "Standard_DS5_v2",
    "Standard_DS11_v2", "Standard_DS12_v2", "Standard_DS13_v2", "Standard_DS14_v2",
    "Standard_D1_v2", "Standard_D2_v2", "Standard_D3_v2", "Standard_D4_v2", "Standard_D5_v2",
    "Standard_D11_v2", "Standard_D12_v2", "Standard_D13_v2", "Standard_D14_v2",
    "Standard_D2_v3", "Standard_D4_v3", "Standard_D8_v3", "Standard_D16_v3", "Standard_D32_v3", "Standard_D64_v3",
    "Standard_D2s_v3", "Standard_D4s_v3", "Standard_D8s_v3", "Standard_D16s_v3", "Standard_D32s_v3",
    "Standard_D64s_v3", "Standard_E2s_v3", "Standard_E4s_v3", "Standard_E8s_v3", "Standard_E16s_v3",
    "Standard_E32s_v3", "Standard_E64s_v3", "Standard_F2s_v2", "Standard_F4s_v2", "Standard_F8s_v2",
    "Standard_F16s_v2", "Standard_F32s_v2", "Standard_F64s_v2", "Standard_F72s_v2",
)
#: sizes of the Batch AI era that Azure has retired (NC, NCv2, ND, NV: 2023)
RETIRED_SIZES = (
    "Standard_NC6", "Standard_NC12", "Standard_NC24", "Standard_NC24r",
    "Standard_NC6s_v2", "Standard_NC12s_v2", "Standard_NC24s_v2", "Standard_NC24rs_v2",
    "Standard_ND6s", "Standard_ND12s", "Standard_ND24s", "Standard_ND24rs",
    "Standard_NV6", "Standard_NV12", "Standard_NV24",
)
_KNOWN = {name.lower(): name for name in GPU_SIZES + CPU_SIZES}
_RETIRED = {name.lower() for name in RETIRED_SIZES}
_SPELLED = {name.lower(): name for name in GPU_SIZES + CPU_SIZES + RETIRED_SIZES}


def check_amlcompute_vm_size(vm_size: str, field: str = "vm_size") -> str:
    """The size as Azure spells it; :class:`InvalidSpecError` naming ``field`` otherwise."""
    key = vm_size.lower() if isinstance(vm_size, str) else ""
    if key in _RETIRED:
        raise InvalidSpecError(field, f"{vm_size!r} was retired by Azure and cannot be allocated",
                               "a current GPU size such as Standard_NC6s_v3 or Standard_NC4as_T4_v3")
    if key not in _KNOWN:
        raise InvalidSpecError(field, f"{vm_size!r} is not an AmlCompute VM size",
                               "a size such as " + ", ".join(GPU_SIZES[:6]) + " (see vm_sizes.GPU_SIZES)")
    return _KNOWN[key]


def canonical_vm_size(vm_size: str) -> str:
    """A size the service reported, spelled as Azure documents it: AmlCompute answers
    ``STANDARD_DS2_V2`` while a compute is being created and ``Standard_DS2_v2`` afterwards.
    A size not listed here is returned as the service wrote it."""
    return _SPELLED.get(vm_size.lower(), vm_size) if isinstance(vm_size, str) else vm_size
