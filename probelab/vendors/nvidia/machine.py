"""What this machine has of NVIDIA's: `doctor`'s rows (NVRTC, nvdisasm and their files)
and the fleet's resources (NVRTC's release). The toolchain is imported here, when asked."""

from probelab.errors import LabError


def rows() -> list[tuple[str, bool, str]]:
    from probelab.toolchains import identity
    from probelab.vendors.nvidia import toolchain as nvidia

    out = []
    try:
        out.append(("NVRTC", True, nvidia.nvrtc_version()))
    except LabError as exc:
        out.append(("NVRTC", False, str(exc)))
    tool = nvidia.find_nvdisasm()
    if tool is None:
        return [*out, ("nvdisasm", False, nvidia.INSTALL_HINT)]
    try:
        described = nvidia.describe()
    except LabError:  # no NVRTC to compare with (said in its own row), nor its tools
        described = {"disassembler_matches_compiler": "no", "name": "", "tools": {}}
    same = described["disassembler_matches_compiler"] == "yes"
    out.append(("nvdisasm", True, f"{tool} ({nvidia.nvdisasm_version()}; "
                f"{'NVRTC' if same else 'NOT NVRTC'}'s release)"))
    return out + identity.rows(described["name"], described["tools"])


def resources(static: set[str]) -> tuple[list[str], list[str]]:
    """(its toolchains here, the targets static probes matching `static` can run on)."""
    from probelab.vendors.nvidia import toolchain as nvidia

    try:
        return [f"nvrtc-{nvidia.nvrtc_version()}".replace(" ", "")], []
    except LabError:
        return [], []
