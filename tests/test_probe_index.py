"""The probe index: `list` imports no probe once it is warm, and nothing it holds can change
which probe runs (the import decides) or hide an edit (an edited folder is a miss)."""

import json
import sys
from pathlib import Path

from toylab import TOY_MODULE, ToyLab, invoke

from probelab import cache, probe_index
from probelab.probe import catalog, get_probe


def fresh() -> None:
    sys.modules.pop(TOY_MODULE, None)
    catalog.cache_clear()


def entries(toylab: ToyLab) -> list[Path]:
    return sorted((toylab.root.parent / ".cache" / "probe-index").glob("*.bin"))


def test_a_warm_list_imports_no_probe(toylab: ToyLab) -> None:
    assert invoke("list", "--json").exit_code == 0
    assert len(entries(toylab)) == 1
    fresh()
    listed = json.loads(invoke("list", "--json").stdout)
    assert [p["id"] for p in listed["probes"]] == ["toy"]
    assert TOY_MODULE not in sys.modules  # listed from the index


def test_an_edited_probe_is_a_miss_and_listed_as_it_now_is(toylab: ToyLab) -> None:
    invoke("list", "--json")
    source = toylab.root / "probes" / "toy" / "probe.py"
    source.write_text(source.read_text().replace("value = a + b", "value = a + b, edited"))
    fresh()
    listed = json.loads(invoke("list", "--json").stdout)
    assert listed["probes"][0]["summary"].endswith("edited")
    assert len(entries(toylab)) == 2


def test_an_edit_to_the_probelab_code_a_folder_imports_is_a_miss(toylab: ToyLab,
                                                                  code_copy) -> None:
    """The index is keyed by the probelab modules the folder imports (here the formats,
    inside a function) and by the code that lists it; an edit elsewhere (the CLI) keeps it
    warm."""
    source = toylab.root / "probes" / "toy" / "probe.py"
    source.write_text(source.read_text() + "\n\ndef _codec():\n"
                      "    from probelab.formats import F32\n    return F32\n")
    invoke("list", "--json")
    for edited, count in (("cli.py", 1), ("formats.py", 2), ("probe.py", 3)):
        code_copy.edit(edited)
        fresh()
        assert invoke("list", "--json").exit_code == 0
        assert len(entries(toylab)) == count
        assert (TOY_MODULE in sys.modules) == (count > 1)


def test_an_edited_index_cannot_change_which_probe_runs(toylab: ToyLab) -> None:
    invoke("list", "--json")
    (entry,) = entries(toylab)
    rows = json.loads(cache.lookup(probe_index.KIND, entry.stem))
    rows[0] |= {"folder": "elsewhere", "summary": "forged"}
    rows.append(dict(rows[0], id="ghost"))
    # filed with the cache's own secret: even an index its owner forged only lists
    cache.store(probe_index.KIND, entry.stem, json.dumps(rows).encode())
    fresh()
    probe = get_probe("toy")  # found by importing the folders, not by trusting the index
    assert probe.summary == "test-only probe: value = a + b"
    assert catalog().broken == {}  # the forged folder is not tried
    result = invoke("sweep", "ghost", "--backend", "sim")
    assert result.exit_code == 2 and "unknown probe 'ghost'" in result.stderr


def test_a_corrupt_entry_is_a_miss(toylab: ToyLab) -> None:
    invoke("list", "--json")
    (entry,) = entries(toylab)
    entry.write_text("{not json")
    assert probe_index.read(entry.stem) is None
    fresh()
    assert json.loads(invoke("list", "--json").stdout)["probes"][0]["id"] == "toy"
