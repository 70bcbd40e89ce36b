"""The evidence gates of the lane-id probes trace each operand over exactly the registers its
fragment fills: a span too wide pulls unrelated registers into the trace (and then the gate
cannot require the operand from memory: mma-s4 version 1), a span too narrow leaves
registers unchecked."""

from probelab.kits.lane_id.probe import LaneIdProbe
from probelab.kits.matrix_move.probe import MatrixMoveProbe
from probelab.probe import catalog


def test_every_lane_id_gate_spans_its_fragments_registers(repo_lab) -> None:
    probes = [p for p in catalog().probes.values() if isinstance(p, LaneIdProbe)]
    assert len(probes) >= 10
    wrong = {}
    for probe in probes:
        for shape, kernel in zip(probe.shapes, probe.kernels(probe.vendor), strict=True):
            spans = kernel.evidence.spans
            # operands read from shared-memory tiles reach it as one descriptor operand
            want = (*([] if "a" in shape.tiles else [shape.registers("a")]),
                    *([1] if shape.tiles else [shape.registers("b")]), shape.registers("d"))
            if spans and spans != want:
                wrong[f"{probe.id}/{shape.name}"] = spans
    assert wrong == {}


def test_every_matrix_move_gate_spans_the_registers_its_form_moves(repo_lab) -> None:
    """stmatrix .x4 stores four registers, movmatrix moves one: a gate over fewer leaves
    registers unchecked, over more pulls in unrelated ones; a load has no register source."""
    probes = [p for p in catalog().probes.values() if isinstance(p, MatrixMoveProbe)]
    assert {p.op for p in probes} == {"load", "store", "move"}
    wrong = {}
    for probe in probes:
        for form, kernel in zip(probe.forms, probe.kernels(probe.vendor), strict=True):
            want = {"load": (), "store": (form.num,), "move": (1,)}[form.op]
            if kernel.evidence.spans != want or len(kernel.evidence.operands) != len(want):
                wrong[f"{probe.id}/{form.name}"] = kernel.evidence.spans
    assert wrong == {}
