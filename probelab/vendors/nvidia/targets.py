"""NVIDIA's ISA targets: the sm_ architectures of the CUDA releases the lab meets (NVRTC 13
builds sm_75 to sm_121; whether a toolchain builds one is the toolchain's to say), with the
architecture-specific `a` and family `f` variants of sm_90 and later."""

_SM = (50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 88, 89, 90, 100, 101, 103, 107, 110,
       120, 121)
TARGETS = tuple(f"sm_{n}{v}" for n in _SM for v in ("", *(("a", "f") if n >= 90 else ()))
                if not (n == 90 and v == "f"))
