"""matrix-move: PTX's warp-collective 16-bit matrix movement on sm_90, measured with the
matrix-move kit and no layout assumed. Three probes share the folder and its kernel source:
ldmatrix .m8n8 .x1/.x2/.x4 with and without .trans (ldmatrix-b16, SASS LDSM), stmatrix the
same (stmatrix-b16, SASS STSM, new in sm_90) and movmatrix .m8n8.trans (movmatrix-b16, SASS
MOVM): which lane's address feeds which row, which lane ends up with which elements.

The 8-bit forms (ldmatrix .m16n16/.m8n16 .b8, stmatrix .m16n8 .b8) are not sm_90's: ptxas
refuses them there ("Feature 'ldmatrix.b8' not supported on .target 'sm_90'"; the probe's
README and tests/test_matrix_move.py hold the refusal).
"""

from pathlib import Path

from probelab.kits.matrix_move.probe import Form, MatrixMoveProbe
from probelab.probe import Evidence

HERE = Path(__file__).parent
SASS = {"load": "LDSM", "store": "STSM", "move": "MOVM"}
EXCLUDED = {"sm_[0-7]*": "measured and sealed for sm_90 (stmatrix needs sm_90, ldmatrix and "
                         "movmatrix sm_75)",
            "sm_8*": "measured and sealed for sm_90", "sm_1??*": "measured and sealed for sm_90"}


def forms(op: str, name: str) -> tuple[Form, ...]:
    if op == "move":
        return (Form(f"{name}_trans", op, 1, True),)
    return tuple(Form(f"{name}_x{n}{'_trans' if t else ''}", op, n, t)
                 for t in (False, True) for n in (1, 2, 4))


def evidence(form: Form) -> Evidence:
    """Exactly one instruction of this form (SASS: .16 element, M88 or MT88 with .trans, .2 or
    .4 matrices) and none of the kit's other movement instructions or a shuffle; stored and
    moved registers straight from their loads, every register of the fragment (SASS names an
    address first, which the gate does not count as a source)."""
    sass = SASS[form.op]
    form_suffix = rf"\.16\.M{'T' if form.trans else ''}88" + {1: "", 2: r"\.2", 4: r"\.4"}[form.num]
    others = [rf"{m}.*" for m in SASS.values() if m != sass]
    operands = {"load": (), "store": ("unmodified",), "move": ("unmodified",)}
    spans = {"load": (), "store": (form.num,), "move": (1,)}
    return Evidence(sass + form_suffix,
                    forbidden=(rf"{sass}(?!{form_suffix}$).*", *others, r"SHFL.*", r"PRMT.*"),
                    operands=operands[form.op], spans=spans[form.op])


def probe(op: str, name: str, seed: int, summary: str) -> MatrixMoveProbe:
    return MatrixMoveProbe(
        id=f"{name}-b16", version="1", summary=summary, targets=("sm_90*",), vendor="nvidia",
        source=HERE / "matrix_move.cu", forms=forms(op, name), evidence=evidence, seed=seed,
        excluded=EXCLUDED)


PROBES = (
    probe("load", "ldmatrix", 0x5EED_1017, "ldmatrix .m8n8 .x1/.x2/.x4 (.trans) .b16: which "
          "address lane and element each register element holds"),
    probe("store", "stmatrix", 0x5EED_1117, "stmatrix .m8n8 .x1/.x2/.x4 (.trans) .b16: which "
          "register element lands at each element of each addressed row"),
    probe("move", "movmatrix", 0x5EED_1217, "movmatrix .m8n8.trans .b16: which lane and half "
          "each destination element comes from"),
)
