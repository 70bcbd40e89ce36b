"""What sm_90's ptxas (NVRTC 13) makes of the mma.sync forms it has no unit for, read from the
disassembly offline: the Volta m8n8k4 .f16 shape becomes a software routine of shuffles and
f32 FMAs (no MMA at all), and .xor.popc two AND.POPC BMMA on complemented operands. The
catalogue states both; these tests hold them (a toolchain that changes them fails here)."""

import re
from pathlib import Path

import pytest

from probelab.probe import Kernel
from tests.toolchains import nvidia_tools

M8N8K4 = {
    "f32": ("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 {%0,%1,%2,%3,%4,%5,%6,%7}, "
            "{%8,%9}, {%10,%11}, {%12,%13,%14,%15,%16,%17,%18,%19};", 8, 12),
    "f16": ("mma.sync.aligned.m8n8k4.row.col.f16.f16.f16.f16 {%0,%1,%2,%3}, {%4,%5}, "
            "{%6,%7}, {%8,%9,%10,%11};", 4, 8),
}
XOR = {"m8n8k128": ("{%0,%1}, {%2}, {%3}, {%4,%5}", 2, 4),
       "m16n8k256": ("{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13}", 4, 10)}


def _kernel(tmp_path: Path, name: str, asm: str, outs: int, ins: int) -> Kernel:
    """A kernel that feeds `asm` from memory and stores every result."""
    constraints = ", ".join(f'"=r"(r[{i}])' for i in range(outs))
    inputs = ", ".join(f'"r"(a[threadIdx.x + {32 * i}])' for i in range(ins))
    source = tmp_path / f"{name}.cu"
    source.write_text(
        f'extern "C" __global__ void k(const unsigned* a, unsigned* d) {{\n'
        f"  unsigned r[{outs}];\n"
        f'  asm volatile("{asm}" : {constraints} : {inputs});\n'
        f"  for (int i = 0; i < {outs}; ++i) d[threadIdx.x * {outs} + i] = r[i];\n}}\n")
    return Kernel(name, "k", source, "nvidia", None)


def _mnemonics(code) -> list[str]:
    return [i.mnemonic for i in code.functions["k"]]


@pytest.mark.parametrize("acc", sorted(M8N8K4))
def test_m8n8k4_f16_is_a_software_routine_on_sm_90(tmp_path, acc: str) -> None:
    nvidia = nvidia_tools()
    asm, outs, ins = M8N8K4[acc]
    code = nvidia.build(_kernel(tmp_path, f"m8n8k4_{acc}", asm, outs, ins), "sm_90")
    ops = _mnemonics(code)
    assert not [m for m in ops if re.fullmatch(r"[A-Z]*MMA.*", m)]  # no matrix unit at all
    calls = [i.text for i in code.functions["k"] if i.mnemonic.startswith("CALL")]
    assert len(calls) == 1 and f"__cuda_sm_8x_mma_row_col_{acc}_f16_f16_{acc}" in calls[0]
    assert ops.count("SHFL.IDX") >= 8 and "FFMA" in ops and "HADD2.F32" in ops


@pytest.mark.parametrize("shape", sorted(XOR))
def test_xor_popc_is_two_and_popc_bmma_on_complemented_operands(tmp_path, shape: str) -> None:
    nvidia = nvidia_tools()
    operands, outs, ins = XOR[shape]
    asm = f"mma.sync.aligned.{shape}.row.col.s32.b1.b1.s32.xor.popc {operands};"
    code = nvidia.build(_kernel(tmp_path, f"xor_{shape}", asm, outs, ins), "sm_90")
    text = [i.text for i in code.functions["k"]]
    calls = [t for t in text if t.startswith("CALL")]
    assert len(calls) == 1 and f"__cuda_sm_9x_mma_bit_internal_xor_{shape}" in calls[0]
    mnk = shape[1:].replace("n", "").replace("k", "")
    bmma = [t for t in text if t.startswith("BMMA")]
    assert len(bmma) == 2 and all(t.startswith(f"BMMA.{mnk}.AND.POPC") for t in bmma)
    assert any(t.startswith("LOP3.LUT") and "0x33" in t for t in text)  # ~x
