"""The probelab command line.

Exit codes: 0 confirmed / ok · 1 refuted (or not evidence) · 2 usage error ·
3 integrity failure (tampered, post-hoc, broken ledger, failed evidence or device checks) ·
4 no suitable device or toolchain.
"""

import contextlib
import functools
import gc
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Column, Table

from probelab.errors import Exit, IntegrityError, KernelTimeout, LabError, Terminated, UsageError
from probelab.limits import DEFAULT_TIMEOUT_S, FLEET_CONNECT_S
from probelab.paths import cache_dir, lab_of, shown
from probelab.storage import written
from probelab.text import printable

if TYPE_CHECKING:
    from probelab.manifest import Measured
    from probelab.notary.verdicts import Judgement

EPILOG = ("Exit codes: 0 confirmed/ok, 1 refuted, 2 usage error, 3 integrity failure "
          "(tampered, post-hoc, broken ledger, failed evidence), 4 no suitable device or "
          "toolchain.")


def _vendors_said() -> SimpleNamespace:
    """What the options' help says of the vendor table (its backends, targets, patterns)."""
    from probelab import vendors

    try:
        table = list(vendors.VENDORS.values())
    except LabError:  # a broken PROBELAB_VENDORS folder: the command itself will say so
        table = []
    drivers = [(v, d) for v in table for d in v.drivers]
    return SimpleNamespace(
        devices=", ".join(f"{d.backend} ({d.device})" for _, d in drivers),
        fallback=drivers[0][1].backend if drivers else vendors.SIM,
        examples=", ".join(vendors.examples()) if table else "",
        patterns=" or ".join(repr(v.pattern) for v in table),
        backends=", ".join(d.backend for _, d in drivers),
        own=", ".join(f"{d.backend} for {v.pattern}" for v, d in drivers))


_said = _vendors_said()
app = typer.Typer(help="probelab: empirical ISA probes with sealed preregistrations.\n\n"
                  "Typical session: `probelab list`, `probelab prereg new PROBE ID`, "
                  "`probelab prereg seal FILE`, `probelab sweep PROBE`, "
                  "`probelab check FILE DATASET`, `probelab plot DATASET`.",
                  epilog=EPILOG, no_args_is_help=True, rich_markup_mode=None,
                  add_completion=False)
prereg_app = typer.Typer(help="Write, seal and verify preregistered hypotheses.",
                         epilog=EPILOG, no_args_is_help=True, rich_markup_mode=None)
app.add_typer(prereg_app, name="prereg")
# soft_wrap: a message is one line however narrow the terminal (grep and logs read it whole)
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)
# typer's own control flow (exit, abort, usage errors) must reach typer untouched.
PASS_THROUGH = tuple(getattr(typer, n) for n in ("Exit", "Abort", "TyperException")
                     if hasattr(typer, n))
JsonOpt = Annotated[bool, typer.Option("--json", help="Print only JSON on stdout.")]


def _version(value: bool) -> None:
    if value:
        import probelab

        typer.echo(f"probelab {probelab.__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print probelab's version and exit.")] = False,
) -> None:
    """probelab: empirical ISA probes with sealed preregistrations."""


def guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn lab errors into one clear line on stderr and the documented exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        written.clear()
        previous = _on_sigterm(_terminate)
        try:
            cache_dir()  # a cache inside the lab is refused before any work, as one usage
            # error (verify would report it per file, as if each file had a problem)
            return fn(*args, **kwargs)
        except LabError as exc:
            err.print(f"[bold red]error:[/] {safe(str(exc))}", highlight=False)
            if isinstance(exc, KernelTimeout):  # work still runs on the device:
                sys.stdout.flush()  # leave without the teardown that would wait for it
                sys.stderr.flush()
                os._exit(int(exc.code))
            raise typer.Exit(int(exc.code)) from None
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM raised as Terminated
            done = ", ".join(shown(p) for p in written)
            said = f"written before that: {done}" if done else "nothing was written"
            err.print(safe(f"interrupted; {said}"), highlight=False)
            raise typer.Exit(143 if isinstance(exc, Terminated) else 130) from None
        except BrokenPipeError:  # the reader left (e.g. `| head`): not a failure of ours
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(0) from None
        except PASS_THROUGH:
            raise
        except Exception as exc:  # a bug must never read as "refuted" (exit 1)
            err.print(f"[bold red]internal error:[/] {safe(f'{type(exc).__name__}: {exc}')}")
            raise typer.Exit(int(Exit.INTEGRITY)) from exc
        finally:
            _on_sigterm(previous)

    return wrapper


def in_lab_of(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A command given paths (its parameters `names`: a path, a list of them, or a
    PATH[:KERNEL] text) works, where neither $PROBELAB_ROOT nor the cwd is in a lab, in the
    lab that holds them (paths.lab_of): `probelab check /lab/preregistrations/... /lab/data/...`
    from anywhere."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(**kwargs: Any) -> Any:
            given = [kwargs[name] for name in names]
            with lab_of(Path(p) for v in given for p in (v if isinstance(v, list) else [v])
                        if p is not None):
                return fn(**kwargs)

        return wrapper

    return decorate


def _terminate(signum: int, frame: object) -> None:
    raise Terminated()


def _on_sigterm(handler: Any) -> Any:
    """Install a SIGTERM handler (where signals can be handled); returns the previous one."""
    if threading.current_thread() is not threading.main_thread() or handler is None:
        return None
    return signal.signal(signal.SIGTERM, handler)


def say(text: object, err: bool = False) -> None:
    """Print plain text with every control character written out (see probelab.text)."""
    typer.echo(printable(str(text)), err=err)


def safe(text: object) -> str:
    """Text for rich: its markup escaped and its control characters written out."""
    return escape(printable(str(text)))


def _is_dataset(path: Path) -> bool:
    """Whether a file starts as netCDF4 (HDF5) does."""
    from probelab.bounded import starts_with

    return starts_with(path, b"\x89HDF\r\n\x1a\n")


@contextlib.contextmanager
def _progress() -> Iterator[Callable[[str], None]]:
    """A step function that shows the work under way on stderr (on a terminal only; the
    line is gone once the work is done)."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=err, transient=True, disable=not err.is_terminal) as progress:
        task = progress.add_task("starting", total=None)
        yield lambda text: progress.update(task, description=text)


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


@app.command("list", epilog=EPILOG)
@guarded
def list_cmd(
    as_json: JsonOpt = False,
    measured_only: Annotated[bool, typer.Option("--measured", help=(
        "Only the probes with measured data (a dataset pinned in data/)."))] = False,
) -> None:
    """List probes, their targets and kernels, where each has measured data (pinned
    datasets per target: how many, and the newest's date), and which backends are
    installed here (no device is opened: `probelab doctor` opens each and says what it
    is)."""
    from dataclasses import asdict

    from probelab.doctor import backend_presence
    from probelab.probe import catalog

    found = catalog()
    backends = backend_presence()
    measured, unread = _measured()
    probes = [{"id": e.id, "version": e.version, "summary": e.summary,
               "targets": list(e.targets), "kernels": e.kernels,
               "measured": [asdict(m) for m in measured.get(e.id, [])]}
              for e in found.entries() if measured.get(e.id) or not measured_only]
    if unread:
        say(f"note: no measured data shown: {unread} (`probelab verify` says more)", err=True)
    if as_json:
        emit_json({"probes": probes, "backends": backends, "broken": found.broken})
        return
    from rich.text import Text  # cells as plain text: no markup to parse, 5 per probe

    rows = [tuple(map(printable, (
        p["id"], ", ".join(p["targets"]),
        "; ".join(f"{v}: {', '.join(ks)}" for v, ks in p["kernels"].items()),
        "\n".join(f"{m['target']}: {m['count']} ({m['latest'][:10]})"
                  for m in p["measured"]) or "-", p["summary"]))) for p in probes]

    # an id is never cut or wrapped, whatever the width (a terminal's, or 80 when piped);
    # the other cells fold, never cut (the measured column is at least a date wide)
    table = Table(Column("probe", no_wrap=True, min_width=max(
                      (len(row[0]) for row in rows), default=0)),
                  Column("targets", overflow="fold"), Column("kernels", overflow="fold"),
                  Column("measured (latest)", overflow="fold", min_width=12),
                  Column("summary", overflow="fold"))
    for row in rows:
        table.add_row(*map(Text, row))
    out.print(table)
    for name, status in backends.items():
        mark = "[green]found[/]" if status["found"] else "[yellow]not found[/]"
        out.print(f"backend {name}: {mark} — {safe(status['detail'])}")
    for folder, why in found.broken.items():
        err.print(f"[red]probe folder {safe(folder)} failed to load:[/] {safe(why)}")


def _measured() -> "tuple[dict[str, list[Measured]], str | None]":
    """The archive's pinned datasets per probe and target (probelab.manifest.measured),
    and why none are known where the manifest cannot be read."""
    from probelab import manifest

    try:
        return manifest.measured(manifest.read()), None
    except IntegrityError as exc:
        return {}, str(exc)


@app.command(epilog=EPILOG)
@guarded
def doctor(as_json: JsonOpt = False) -> None:
    """Report devices, toolchains and package versions, and how to get what is missing."""
    from probelab.doctor import diagnose

    report = diagnose()
    if as_json:
        emit_json(report)
        return
    # nothing cut short with "…", whatever the width: a check's name and its status are
    # never wrapped, and a long path folds onto the next line
    table = Table(Column("check", no_wrap=True, min_width=max(
                      len(row["name"]) for row in report["checks"])),
                  Column("status", no_wrap=True, min_width=len("not ok")),
                  Column("detail / fix", overflow="fold"))
    for row in report["checks"]:
        status = "[green]ok[/]" if row["ok"] else "[yellow]not ok[/]"
        table.add_row(safe(row["name"]), status, safe(row["detail"]))
    out.print(table)


def says_what_it_added(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A sweep that adds datasets to the archive says so in its last line (stdout; with
    --json, the document says it), also after an error: which folders, how many datasets
    (each pinned) and verdicts."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        finally:
            if not kwargs.get("as_json") and (added := _added_to_archive()):
                say(added)

    return wrapper


def _added_to_archive() -> str | None:
    """What this command added to the archive, in one line (None if nothing): its datasets
    under data/, each pinned in the manifest, and the verdicts saved beside them."""
    from probelab.paths import data_dir, relative

    root = data_dir().resolve()
    added = [path for path in written if path.resolve().is_relative_to(root)]
    datasets = [path for path in added if path.suffix == ".nc"]
    if not datasets:
        return None
    verdicts = sum(path.name.endswith(".verdict.json") for path in added)
    folders = ", ".join(sorted({f"{relative(path.parent)}/" for path in datasets}))
    return (f"added to the archive: {len(datasets)} dataset{'s' * (len(datasets) > 1)} in "
            f"{folders}, pinned in data/MANIFEST.jsonl, and {verdicts} "
            f"verdict{'s' * (verdicts != 1)} beside them; commit them (git add data), or "
            "sweep with --out DIR to try a probe without adding to the archive")


@app.command(epilog=EPILOG)
@guarded
@says_what_it_added
def sweep(
    probe: Annotated[str, typer.Argument(help="Probe id, e.g. byte-perm (see `probelab list`).")],
    backend: Annotated[str | None, typer.Option(
        help=f"{_said.devices} or sim (simulated device, never evidence; writes under "
             f"sim-data/); default: the GPU backend whose driver this machine has "
             f"({_said.fallback} where none). Not for static probes.")] = None,
    target: Annotated[str | None, typer.Option(help="ISA target: for sim, and for static "
                                               "probes (the toolchain is the device).")] = None,
    repeats: Annotated[int | None, typer.Option(help="Fresh launches per kernel (default 3, "
                                                "at least 2); all must be byte-identical. "
                                                "Not for static probes.")] = None,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Root for datasets (default "
                                                 "data/, or sim-data/ for sim).")] = None,
    check_after: Annotated[bool, typer.Option("--check", help="Then check every sealed "
                                              "hypothesis of the probe that applies, and save "
                                              "the verdicts beside the dataset.")] = False,
    timeout: Annotated[float | None, typer.Option(
        help=f"Seconds one launch may take before the sweep stops as hung (exit 3, nothing "
             f"written); default {DEFAULT_TIMEOUT_S:g}. Not for static probes.",
        min=0.001, show_default=False)] = None,
    allow_blind: Annotated[bool, typer.Option("--allow-blind", help="Measure even when the "
                                              "stimulus cannot tell two sealed rivals apart "
                                              "(see `prereg power`); the dataset records the "
                                              "blind pairs. A simulated sweep only warns.")
                           ] = False,
    allow_thin: Annotated[bool, typer.Option("--allow-thin", help="Measure even when the "
                                             "stimulus tells two sealed rivals apart on fewer "
                                             "cells than their floor (`prereg power`: THIN); "
                                             "the dataset records the thin pairs.")] = False,
    toolchain: Annotated[str | None, typer.Option(
        help="Static probes: the compiler that is measured, by name (clang-19, clang-22; "
             "`probelab doctor` lists them) or `all`: one dataset per (target, toolchain). "
             "Default: $PROBELAB_CLANG, else the newest.")] = None,
) -> None:
    """Run a probe on a device and save one dataset with full provenance.

    Compiles each kernel, proves from the disassembly that the instruction under test is
    there and fed from memory, runs every kernel REPEATS times with poisoned outputs and
    guard words, and writes data/PROBE/TARGET/TIME.nc atomically. Nothing is written if
    any step fails; a stimulus blind to two sealed rivals is refused unless --allow-blind,
    one that parts them on fewer cells than their floor unless --allow-thin (see `prereg
    power`; a simulated sweep warns and goes on, recording them). With
    --check, the verdicts follow at once, and each sealed hypothesis left out says why
    (exit 3 if any is tampered or post hoc, 1 if the data are simulated, as `check` says;
    refuted rivals are results, not failures: 0).

    A static probe is measured on a compiler: without --target, on every target it lists;
    with --toolchain all, under every toolchain found. A (target, toolchain) pair the
    toolchain cannot build is said and skipped (exit 4 if no pair could be built).

    A sweep that adds to the archive (data/) says so in its last line; --out DIR tries a
    probe without touching it (no verdict counts there: --check is for the archive).
    """
    from probelab.backends import prewarm
    from probelab.paths import data_dir
    from probelab.probe import get_probe, info
    from probelab.vendors import default_backend

    if check_after and out_dir is not None and backend != "sim" \
            and out_dir.resolve() != data_dir().resolve():
        raise UsageError("--check is for the archive: a measured dataset counts only in "
                         f"{shown(data_dir())}/, where it is pinned, so no verdict on one under "
                         "--out would count; sweep without --out to check it, or without "
                         "--check to try the probe")
    static = info(get_probe(probe)).static
    if not static:
        if toolchain is not None:
            raise UsageError(f"--toolchain is for static probes; {probe} runs on a device "
                             "(its dataset records the compiler that built each kernel)")
        prewarm(backend or default_backend())  # the device's setup overlaps the imports below
    from probelab.sweep import run_sweep

    with _progress() as step:
        kwargs = dict(out_root=out_dir, allow_blind=allow_blind, allow_thin=allow_thin, step=step,
                      command=["probelab", *sys.argv[1:]])
        if static:
            from probelab.static import refuse_device_options, run_static_sweeps

            refuse_device_options(get_probe(probe), backend=backend, repeats=repeats,
                                  timeout=timeout)
            results, skipped = run_static_sweeps(get_probe(probe), target, toolchain, **kwargs)
        else:
            results = [run_sweep(probe, backend, target=target, repeats=repeats,
                                 timeout_s=timeout, **kwargs)]
            skipped = {}
    for pair, why in skipped.items():
        say(f"skipped {pair}: {why}", err=True)
    codes = []
    for result in results:  # every dataset said, its checks too, then the worst exit
        try:
            codes.append(_said_sweep(result, check_after))
        except LabError as exc:
            if len(results) == 1:
                raise
            err.print(f"[bold red]error:[/] {safe(str(exc))}", highlight=False)
            codes.append(int(exc.code))
    if max(codes):
        raise typer.Exit(max(codes))


def _said_sweep(result, check_after: bool) -> int:
    """What `sweep` says of one dataset saved, and with --check its verdicts; the exit code
    they call for."""
    prov = result.provenance
    same = "identical" if prov["repeats_identical"] else "(declared outputs varied)"
    done = (f"{prov['target']}: {prov['toolchain'].get('name', 'the toolchain')}'s output, "
            "every case built twice, identical"
            if prov.get("static") else
            f"{prov['device']} ({prov['target']}), {prov['repeats']} repeats {same}")
    err.print(safe(done) + (", [bold red]SIMULATED[/]" if prov["simulated"] else ""))
    say(str(result.path))
    if check_after:
        from probelab.check import kernel_statuses, verdict_words

        judgements, skipped, code = _checked(result.path, prov)
        for doc in (j.doc for j in judgements):
            kernels = ", ".join(f"{k} {v}" for k, v in kernel_statuses(doc).items())
            say(f"{doc['hypothesis']['id']}: {verdict_words(doc)} ({kernels})")
        for hypothesis, why in skipped.items():
            say(f"{hypothesis}: not applicable ({why})")
        return code
    return 0


def _checked(path: Path, prov: dict) -> "tuple[list[Judgement], dict[str, str], int]":
    """Every sealed hypothesis that applies, checked on a saved dataset: the judgements,
    those left out and why, and the exit code they call for (notary.verdicts.sweep_exit)."""
    from probelab.check import check_all
    from probelab.notary.verdicts import sweep_exit

    judgements, skipped = check_all(path)
    return judgements, skipped, int(sweep_exit((j.outcome for j in judgements),
                                               bool(prov["simulated"])))


@app.command(epilog=EPILOG)
@guarded
def asm(
    probe: Annotated[str, typer.Argument(help="Probe id (see `probelab list`).")],
    arch: Annotated[str, typer.Option(help=f"Target ISA: {_said.examples}, ...")],
    toolchain: Annotated[str | None, typer.Option(
        help="The compiler, by name (clang-19, clang-22; see `probelab doctor`) or `all`; "
             "default $PROBELAB_CLANG, else the newest.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Build a probe's kernels offline for --arch and show what the code objects hold.

    Prints each kernel's disassembly, instruction histogram and the evidence gate's
    findings: the instruction under test is present, no forbidden relative is, and each
    operand reaches it from memory as declared. Exit 3 if any kernel fails the gate; 4 if
    no toolchain can build the target (the message names one that would).
    """
    from dataclasses import asdict

    from probelab.asm import inspect

    reports = inspect(probe, arch, toolchain)
    if as_json:
        emit_json([asdict(r) for r in reports])
    else:
        for r in reports:
            say(f"== {r.kernel} ({r.symbol}) for {arch} by {r.toolchain}: {r.status.upper()}")
            if r.status == "skipped":
                say(f"   {r.detail}")
                continue
            say("\n".join(f"   {line}" for line in r.disassembly))
            say("   histogram: " + ", ".join(f"{k} {v}" for k, v in r.histogram.items()))
            for c in r.evidence.get("companions", []):
                say(f"   {c['place']} it: {len(c['found'])} x {c['pattern']} (needs "
                    f"{c['count'] or 'at least 1'})")
            for t in r.evidence.get("operands", []):
                say(f"   operand {t['operand']}: {t['reaches']} (needs "
                           f"{t['requirement']}) via {' <- '.join(t['path'])}")
            if r.detail:
                say(f"   problems: {r.detail}")
    if any(r.status == "failed" for r in reports):
        raise typer.Exit(int(Exit.INTEGRITY))


@app.command("source", epilog=EPILOG)
@guarded
def source_cmd(
    probe: Annotated[str, typer.Argument(help="Probe id (see `probelab list`).")],
    write: Annotated[Path | None, typer.Option(
        help="Write each source under this folder, at its lab path, instead of printing it "
             "(a folder outside probes/: a file there would count as code that ran).")] = None,
) -> None:
    """Show the exact kernel sources a build of PROBE compiles, each under the lab path and
    sha256 its datasets record (kernels' `source`, `source_sha256`): a kept file's bytes,
    or the text a kit renders from the probe's declarations (no file holds it)."""
    import hashlib

    from probelab.paths import probes_dir
    from probelab.probe import get_probe, kernel_sources

    found = kernel_sources(get_probe(probe))
    # where each file would land (DIR/<lab path>, and a lab path starts with probes/), not
    # only DIR: the lab root, or any folder above probes/, would put them inside it
    inside = probes_dir().resolve()
    if write is not None and any(target.resolve().is_relative_to(inside) for target in
                                 (write, *(write / shown(path) for path in found))):
        raise UsageError(f"--write {write} is inside probes/ or would write into it: a "
                         "source written there would count as code that ran")
    for path, data in found.items():
        rel = shown(path)
        if write is None:
            say(f"// == {rel} (sha256 {hashlib.sha256(data).hexdigest()})")
            sys.stdout.write(data.decode())
            continue
        (write / rel).parent.mkdir(parents=True, exist_ok=True)
        (write / rel).write_bytes(data)
        say(f"wrote {shown(write / rel)}")


@prereg_app.command("new", epilog=EPILOG)
@guarded
def prereg_new(probe: str, hypothesis_id: Annotated[str, typer.Argument(metavar="ID")]) -> None:
    """Write a hypothesis template for PROBE under preregistrations/PROBE/ID.toml."""
    from probelab.prereg import new

    say(str(new(probe, hypothesis_id)))


@prereg_app.command("seal", epilog=EPILOG)
@in_lab_of("files")
@guarded
def prereg_seal(
    files: Annotated[list[Path], typer.Argument(help="Hypothesis TOML files.")],
    allow_blind: Annotated[bool, typer.Option("--allow-blind", help="Seal even a file the "
                                              "probe's stimulus cannot tell from a sealed "
                                              "rival or from one of its near misses; the "
                                              "seal commit records the pairs.")] = False,
) -> None:
    """Seal hypotheses before measuring: evaluate, hash, append to the ledger, git commit.

    Each seal is its own commit whose message carries the ledger entry's hash. A sealed
    file is never edited; to change a hypothesis write a new file with parent = old id.
    A file that predicts the same as a sealed rival (or as one of its own near misses) on
    every cell both claim of the probe's stimulus is refused (exit 2, nothing written): it
    would make every measured sweep of the probe blind for good (see `prereg power`). If it
    restates the rival, declare agrees_with = ["<id>"]; --allow-blind seals it anyway.
    """
    from probelab.prereg import seal

    for path in files:
        entry = seal(path, allow_blind)
        say(f"sealed {entry['probe']}/{entry['hypothesis']} {entry['hash']}")


@prereg_app.command("verify", epilog=EPILOG)
@guarded
def prereg_verify(as_json: JsonOpt = False) -> None:
    """Check the ledger's chain, every sealed file's hash and every seal commit."""
    from probelab.prereg import verify_seals

    rows = verify_seals()
    if as_json:
        emit_json(rows)
    else:
        for r in rows:
            problems = safe("; ".join(r["problems"]))
            status = "[green]ok[/]" if r["ok"] else f"[red]{problems}[/]"
            notes = "".join(f" ({safe(n)})" for n in r["notes"])
            out.print(safe(f"{r['seq']:>3} {r['probe']}/{r['id']} {(r['commit'] or '-')[:12]}")
                      + f" {status}{notes}")
    if not all(r["ok"] for r in rows):
        raise typer.Exit(int(Exit.INTEGRITY))


@prereg_app.command("list", epilog=EPILOG)
@guarded
def prereg_list(as_json: JsonOpt = False) -> None:
    """List hypothesis files: sealed or not, and which sealed ones their probe has retired
    (sealed for an earlier version: still scored on data that observed them)."""
    from probelab import ledger
    from probelab.hypothesis import load_hypothesis, retired_observables
    from probelab.paths import ledger_path, prereg_dir, relative

    entries = {e["path"]: e for e in ledger.read(ledger_path())}
    rows = []
    for p in sorted(prereg_dir().glob("*/*.toml")):
        entry = entries.get(relative(p))
        try:
            retired = retired_observables(load_hypothesis(p)) if entry else []
        except LabError:
            retired = []  # an unreadable file: `prereg verify` says why
        rows.append({"path": relative(p), "sealed": entry is not None,
                     "hash": entry and entry["hash"], "retired": retired})
    if as_json:
        emit_json(rows)
        return
    for r in rows:
        note = f" (retired: predicts {r['retired']}, no longer observed)" if r["retired"] else ""
        say(f"{'sealed  ' if r['sealed'] else 'UNSEALED'} {r['path']}{note}")


@prereg_app.command("power", epilog=EPILOG)
@guarded
def prereg_power(
    probe: Annotated[str, typer.Argument(help="Probe id (see `probelab list`).")],
    target: Annotated[str | None, typer.Option(help="Only hypotheses about this ISA target, "
                                               "as a sweep there would see them.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Before measuring: can the probe's stimulus tell its sealed rivals apart?

    For every pair of sealed hypotheses that claim common cells (and every hypothesis and
    each near miss it declares), counts the cells where their predictions differ, with a
    few examples. A pair that differs on no cell is BLIND: no data could confirm one and
    refute the other, and `sweep` refuses it (exit 3) unless --allow-blind. A pair that
    differs on fewer cells than its floor is THIN (the probe's `separation_floor`: 32 for
    the lane-id, sparse and numerics kits; a file may lower it for its pairs with `[power]
    floor` and a reason): `sweep` refuses it unless --allow-thin. Exit 3 here too when any
    pair is blind or thin. A pair one file declares it restates (`agrees_with`) is shown
    as a RESTATEMENT and never blocks.
    """
    from probelab.power import power
    from probelab.probe import get_probe

    pairs, notes = power(get_probe(probe), target=target)
    if as_json:
        emit_json({"pairs": [p.to_dict() for p in pairs], "notes": notes})
    else:
        if not pairs:
            say(f"{probe}: fewer than two sealed hypotheses claim common cells")
        for p in pairs:
            if p.compared == 0:
                say(f"{p.a} / {p.b}: no cells in common (different kernels or scopes)")
                continue
            state = ("BLIND" if p.blind else "RESTATEMENT: identical on all "
                     f"{p.compared:,} cells" if p.kind == "restatement" and not p.differing
                     else f"differ on {p.differing:,} of {p.compared:,} cells")
            if p.thin:
                state = f"THIN: {state}, under the floor of {p.floor:,}"
            say(f"{p.a} / {p.b} ({p.kind}): {state}")
            for example in p.examples:  # predictions as the 32-bit words they are
                say("    " + ", ".join(
                    f"{k}={v:#010x}" if k in (p.a, p.b) else f"{k}={v}"
                    for k, v in example.items()))
        for note in notes:
            say(f"note: {note}")
    if any(p.blind or p.thin for p in pairs):
        raise typer.Exit(int(Exit.INTEGRITY))


@app.command(epilog=EPILOG)
@in_lab_of("prereg", "dataset_path")
@guarded
def check(
    prereg: Annotated[Path, typer.Argument(help="A sealed hypothesis file.")],
    dataset_path: Annotated[Path, typer.Argument(metavar="DATASET", help="A .nc dataset.")],
    as_json: JsonOpt = False,
    save: Annotated[bool, typer.Option(help="Save the verdict JSON beside the dataset (only a "
                                       "verdict that counts: never TAMPERED or POST-HOC, and "
                                       "NOT-EVIDENCE only outside data/).")] = True,
) -> None:
    """Score a dataset against a sealed hypothesis: literally and under each translation.

    Refuses to count (exit 3) a hypothesis edited after sealing, a broken ledger, or a seal
    that is not provably older than the measurement. Simulated data are NOT-EVIDENCE. A
    file never sealed is refused (exit 2) after its own errors: `prereg seal` it first.
    """
    from probelab.check import assess
    from probelab.notary.verdict_files import save_verdict
    from probelab.report import render

    if _is_dataset(prereg):
        raise UsageError(
            f"the arguments are swapped: {prereg} is a dataset; the order is `probelab check "
            "HYPOTHESIS.toml DATASET.nc`" if dataset_path.suffix == ".toml" else
            f"{prereg} is a dataset, not a hypothesis: `probelab check HYPOTHESIS.toml "
            "DATASET.nc`")
    verdict = assess(prereg, dataset_path)
    doc = verdict.doc
    if save:
        doc_path = save_verdict(doc, dataset_path)
        err.print(safe(f"verdict saved to {doc_path}" if doc_path else
                       f"verdict not saved: a {doc['verdict']} verdict does not count"),
                  highlight=False)
    if as_json:
        emit_json(doc)
    else:
        say(render(doc))  # plain: Markdown tables must not be wrapped
    raise typer.Exit(int(verdict.outcome.exit))


@app.command(epilog=EPILOG)
@guarded
def verify(
    as_json: JsonOpt = False,
    write: Annotated[bool, typer.Option(help="Record verdicts that are missing or new.")] = False,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=0, help=(
        "Processes that check probes side by side (0: one per core). Each probe's "
        "datasets and sealed files are one unit of work; the result is the same for any "
        "number."))] = 0,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help=(
        "Print every check, note and retired dataset, not just the summary."))] = False,
    retired: Annotated[bool, typer.Option("--retired", help=(
        "Check retired datasets in full too (their values against every sealed "
        "hypothesis), not only their bytes against their pins."))] = False,
) -> None:
    """Re-check every dataset under data/ against every sealed hypothesis of its probe.

    Proves each seal intact and older than the measurement, each dataset the one its pin
    names, and every recorded verdict reproduced. Prints a summary (counts per probe and
    every problem in full; --verbose for every check); --json prints everything. Progress
    goes to stderr on a terminal. A retired dataset (`probelab retire`) has its bytes
    checked against its pin and its verdicts listed beside its successors'.

    Exit 0 when the ledger, the sealed files and every dataset are intact and every
    recorded verdict is reproduced; 3 otherwise. Refuted hypotheses are results, not
    failures.
    """
    from probelab.verify import verify_archive

    _verified(lambda step: verify_archive(write=write, jobs=jobs, retired=retired, step=step),
              as_json, verbose)


def _verified(run: Callable[[Callable[[str], None]], dict[str, Any]], as_json: bool,
              verbose: bool) -> None:
    """Run a verify (progress on stderr where it is a terminal), say what it found, and exit
    3 where there is a problem."""
    step = (lambda text: say(text, err=True)) if sys.stderr.isatty() and not as_json \
        else (lambda _: None)
    result = run(step)
    if as_json:  # each problem in words, as printed, and as its findings' wire form
        from probelab.notary.words import lines

        emit_json(result | {"problems": lines(result["problems"]),
                            "problem_findings": [p.wire() for p in result["problems"]]})
    else:
        _say_verified(result, verbose)
    if result["problems"]:
        raise typer.Exit(int(Exit.INTEGRITY))


def _say_verified(result: dict[str, Any], verbose: bool) -> None:
    """A verify result in words: the one place its problems (findings) become sentences."""
    from probelab.notary.words import said
    from probelab.verify_summary import summary_lines

    if verbose:
        for row in result["checks"]:
            kernels = ", ".join(f"{k} {v}" for k, v in row["kernels"].items())
            say(f"{row['dataset']} × {row['hypothesis']}: {row['verdict']} "
                f"({kernels}) [recorded: {row['recorded']}]")
        for row in result["toolchains"]:
            say(f"across toolchains: {row['probe']} (version {row['probe_version']}) "
                f"{row['target']} × {row['hypothesis']}: "
                + ", ".join(f"{t} {v}" for t, v in row["verdicts"].items())
                + ("" if row["same"] else " — changes with the compiler"))
        for row in result["retired"]:
            say(f"retired: {row['dataset']} ({row['reason']}), superseded by "
                f"{', '.join(row['superseded_by'])}")
        for note in result["notes"]:
            say(f"note: {note}", err=True)
    else:
        for line in summary_lines(result):
            say(line)
    for problem in result["problems"]:
        err.print(f"[red]problem:[/] {safe(said(problem))}", highlight=False)
    seals = len(result["seals"])
    summary = f"{len(result['checks'])} checks over {seals} sealed hypotheses"
    say(summary + (", all intact" if not result["problems"] else
                   f", {len(result['problems'])} problems"))


@app.command(epilog=EPILOG)
@in_lab_of("dataset_path", "prereg")
@guarded
def plot(
    kinds: Annotated[list[str] | None, typer.Argument(
        metavar="KIND", help="The plots to draw (e.g. lanemap, mismatch-map); default "
                                  "every plot the dataset offers.", show_default=False)] = None,
    dataset_path: Annotated[Path, typer.Argument(metavar="DATASET", show_default=False,
                                                 help="One dataset (.nc).")] = Path(),
    kind: Annotated[list[str] | None, typer.Option(help="Plot name (repeatable), as KIND; "
                                                   "default all the probe offers.")] = None,
    prereg: Annotated[Path | None, typer.Option(help="Hypothesis for mismatch plots.")] = None,
    scoring: Annotated[str, typer.Option(help="literal or a translation name.")] = "literal",
    out_dir: Annotated[Path | None, typer.Option("--out", help="Folder for PNG and SVG "
                                                 "(default: figures/ beside the dataset).")] = None,
    tampered: Annotated[bool, typer.Option(
        "--tampered", help="Draw a dataset that is TAMPERED all the same, every figure "
                           "marked TAMPERED (for a forensic look; never a result).")] = False,
) -> None:
    """Draw a dataset's figures (PNG and SVG): the maps its probe offers (lane maps for the
    lane-id probes: `probelab plot lanemap DATASET`), and hypothesis mismatch maps when
    --prereg is given. Without KIND, every plot the dataset offers.

    The dataset is first read as `check` reads it: one edited after its sweep, or unpinned,
    misplaced or changed in data/, is TAMPERED and not drawn (exit 3) unless --tampered; a
    measurement outside the archive (e.g. `sweep --out`) is drawn, each figure marked
    UNPINNED."""
    from probelab.plot import draw

    usage = "probelab plot [KIND]... DATASET"
    if dataset_path == Path():
        raise UsageError(f"give a DATASET: {usage}")
    if datasets := [k for k in kinds or () if k.endswith(".nc") or Path(k).is_file()]:
        raise UsageError(f"the DATASET comes last: {usage}" if not dataset_path.is_file() else
                         f"plot draws one dataset at a time, and {', '.join(datasets)} is not "
                         f"a plot kind: {usage}")
    if not dataset_path.exists() and dataset_path.suffix != ".nc":
        raise UsageError(f"no such dataset: {dataset_path} (a plot kind? the DATASET comes "
                         f"after it: {usage})")
    for path in draw(dataset_path, [*(kinds or ()), *(kind or [])] or None, prereg, scoring,
                     out_dir, tampered):
        say(str(path))


@app.command(epilog=EPILOG)
@in_lab_of("paths")
@guarded
def report(
    paths: Annotated[list[Path], typer.Argument(help="Verdict JSON files, or datasets (their "
                                                "recorded verdicts are used).")],
    as_json: JsonOpt = False,
) -> None:
    """Render recorded verdicts as Markdown for a review or PR.

    Each recorded verdict is first re-checked from its sealed file and its dataset; one that
    the data no longer give (forged, or stale) is shown as re-checked and marked, and one that
    cannot be re-checked is marked NOT RE-VERIFIED. Exit 3 if any is marked.
    """
    from probelab.report import recheck, verdict_files

    files, bare = verdict_files(paths)
    for path in bare:
        err.print(safe(f"note: {path} has no recorded verdicts (`probelab check` records them)"),
                  highlight=False)
    rechecked = [recheck(f) for f in files]
    if as_json:
        emit_json([r.to_dict() for r in rechecked])
    else:
        say("\n".join(r.render() for r in rechecked))
    if any(r.warnings for r in rechecked):
        raise typer.Exit(int(Exit.INTEGRITY))


@app.command(epilog=EPILOG)
@in_lab_of("dataset_path", "by")
@guarded
def retire(
    dataset_path: Annotated[Path, typer.Argument(metavar="DATASET", help=(
        "The pinned dataset to retire (data/PROBE/TARGET/NAME.nc)."))],
    by: Annotated[list[Path], typer.Option("--by", help=(
        "A pinned dataset that supersedes it: same probe and target, a newer probe "
        "version, measured later (repeat for several)."))],
    reason: Annotated[str, typer.Option("--reason", help="Why, in one line (recorded).")],
    as_json: JsonOpt = False,
) -> None:
    """Retire a dataset superseded by a re-measurement (data/RETIRED.jsonl, hash-chained).

    The dataset stays in the archive and pinned; `verify` then checks its bytes against its
    pin instead of its values against every sealed file, lists its recorded verdicts beside
    its successors' (a difference is a note), and `verify --retired` checks it in full.
    Refused, with nothing written, unless every --by dataset is pinned, of the same probe
    and target, of another probe version and measured later. To undo a mistaken
    retirement, revert the commit that added its line (the list is only read, and a
    dataset no line retires is checked in full again).
    Commit data/RETIRED.jsonl afterwards.
    """
    from probelab.retirement import retire as record

    entry = record(dataset_path, by, reason)
    if as_json:
        emit_json(entry)
    else:
        say(f"retired {entry['path']} (superseded by {', '.join(entry['superseded_by'])}); "
            f"commit data/RETIRED.jsonl")


@app.command("diff", epilog=EPILOG)
@in_lab_of("a", "b")
@guarded
def diff_cmd(
    a: Annotated[str, typer.Argument(metavar="A", help="Dataset PATH or PATH:KERNEL.")],
    b: Annotated[str, typer.Argument(metavar="B", help="Dataset PATH or PATH:KERNEL.")],
    as_json: JsonOpt = False,
    plot_dir: Annotated[Path | None, typer.Option("--plot", help="Also draw each pair's "
                                                  "mismatch map (PNG and SVG) into DIR.")] = None,
) -> None:
    """Where two datasets of one probe disagree, cell by cell (the porting-hazard report).

    Compares kernel A:KERNEL with B:KERNEL, or without kernels every kernel name both
    datasets have. Refuses (exit 2) datasets of different probes or stimulus grids, or with
    no common kernel. Says what it did not compare (kernels or observables one side lacks).
    Each side is read as `check` reads a dataset: one edited after its sweep, unpinned or
    misplaced in data/, or a measurement outside the archive, is named (TAMPERED, UNPINNED).
    Exit 0 when every compared pair is identical and both sides are the archive's
    measurements; 1 when any pair differs, or when a side is simulated (a diff against a
    model is never evidence); 3 when a side is TAMPERED or UNPINNED (the diff is still shown).
    """
    from probelab.diff import diff, plot, render

    doc, side_a, side_b, results = diff(a, b)
    if plot_dir is not None:
        doc["figures"] = [str(p) for p in plot(doc, side_a, side_b, results, plot_dir)]
    if as_json:
        emit_json(doc)
    else:
        say(render(doc, side_a.ds))
        for path in doc.get("figures", []):
            say(path)
    # 0 only for identical measurements: a difference, or a model on either side, is 1;
    # a side that is not the archive's intact measurement, 3
    same = doc["identical"] and not doc["any_simulated"]
    raise typer.Exit(int(Exit.INTEGRITY if doc["broken"] else
                         Exit.OK if same else Exit.REFUTED))


@app.command("oracle", epilog=EPILOG)
@in_lab_of("paths")
@guarded
def oracle_cmd(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The oracle, e.g. mmasim (MMA-Sim's "
                                        "models of mma and wgmma).")],
    paths: Annotated[list[Path], typer.Argument(metavar="DATASET...",
                                                help="Numerics datasets (.nc).")],
    as_json: JsonOpt = False,
) -> None:
    """Run an outside numeric model on the inputs numerics datasets store; compare its D with
    the measured D bit for bit, per stimulus family.

    A cross-check of the lab's own models, never a verdict: nothing it says is sealed or
    read by verify. `probelab oracle mmasim data/numerics-mma-f16-f32/sm_90/T.nc` asks
    MMA-Sim (`pip install 'probelab[oracles]'`) for the instruction the dataset's kernel
    names on its target's architecture. Each dataset is read as `check` reads one (TAMPERED
    or UNPINNED is named; SIMULATED and RETIRED too). Counts: agree (bit for bit), nan≠
    (both NaN, other bits), disagree (the first cases are shown; --json lists all); every
    kernel the oracle does not model is named. Exit 0 only when every kernel of every
    dataset was compared and every case agrees bit for bit; 1 when a case differs (nan≠
    included) or a dataset is simulated (not evidence); 2 for a dataset that is not
    numerics, or a kernel the oracle does not model (the rest still shown); 3 when a
    dataset is TAMPERED or UNPINNED (the comparison still shown); 4 when the oracle's
    package is not installed.
    """
    from probelab.oracle import render, run

    reports, unmodelled = [], []
    for path in paths:
        done, skipped = run(name, path)
        reports += done
        unmodelled += skipped
    if as_json:
        emit_json({"compared": [r.as_json() for r in reports],
                   "not_compared": [u.as_json() for u in unmodelled]})
    else:
        say(render(reports, unmodelled))
    raise typer.Exit(int(Exit.INTEGRITY if any(r.standing.words() for r in reports) else
                         Exit.REFUTED if any(not r.exact or r.simulated for r in reports) else
                         Exit.USAGE if unmodelled else Exit.OK))


@app.command("import", epilog=EPILOG)
@guarded
def import_cmd(
    src: Annotated[Path, typer.Argument(
        metavar="SRC", help="A device run's or fleet node's measurements: a folder holding "
                            "data/ (its manifest and datasets), a tar file (measured.tar), "
                            "or the first part of a split tar (measured.tar.00; .01, ... "
                            "are read after it, in order).")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Make every check and say what "
                                          "would be imported; write nothing.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Append the datasets and pins of a measurement made elsewhere onto this archive.

    Reads SRC's manifest (its chain verified) and takes the lines not already pinned here,
    whatever came before them (a copy of this manifest, or a fresh chain): each one's
    dataset must be in SRC, be the file its pin names, sit at data/PROBE/TARGET/NAME.nc of
    its own probe and target, and be a measurement made at a commit this repository has
    (from a clean tree, or one whose code tree it records). None may collide with the
    archive (a file or pin at its path, its contents or bytes pinned elsewhere) or with
    another. Then each dataset is copied into data/ and pinned, all or nothing: a new
    manifest line with its branch line's fields (its pinned_at too). Verdict files are
    never imported (`probelab verify --write` re-derives them); datasets SRC's manifest
    does not pin are left out. Importing again is a no-op (already pinned).

    Exit 0 when everything was imported or was already pinned here; 2 when SRC is not a
    folder, tar or first part, cannot be read whole, holds no manifest, or holds a member
    that is a link, a device, an absolute path or one climbing out with `..`, or more
    members or bytes than an import takes; 3 when a chain is broken or any dataset does not
    count or collides (one line each). Nothing is written unless the exit is 0.
    """
    from probelab.merge import Refused, import_source

    try:
        with _progress() as step:
            done = import_source(src, dry_run=dry_run, step=step)
    except Refused as exc:
        if as_json:
            emit_json({"source": str(src), "dry_run": dry_run, "imported": [],
                       "problems": exc.problems})
        else:
            for problem in exc.problems:
                err.print(f"[red]problem:[/] {safe(problem)}", highlight=False)
        raise IntegrityError(f"nothing imported from {src}: {len(exc.problems)} "
                             f"problem{'s' * (len(exc.problems) != 1)}") from None
    pins = done.landed.imported
    if as_json:
        emit_json({"source": done.source, "dry_run": dry_run, "imported": pins,
                   "already_pinned": done.already, "left_out": done.left_out,
                   "verdicts_left_out": done.verdicts, "problems": []})
        return
    for pin in pins:
        say(f"{'would import' if dry_run else 'imported'} {pin['path']}")
    for path in done.left_out:
        say(f"note: {path} is not pinned in the manifest of {done.source}: left out",
            err=True)
    if done.verdicts:
        say(f"note: {done.verdicts} verdict file{'s' * (done.verdicts != 1)} left out: "
            "verdicts are never imported (`probelab verify --write` re-derives them)",
            err=True)
    count = f"{len(pins)} dataset{'s' * (len(pins) != 1)}"
    say(f"{count} {'would be imported' if dry_run else 'imported'} from {done.source}"
        + (f" ({done.already} already pinned here)" if done.already else ""))


layout_app = typer.Typer(help="Measured lane maps as CuTe layouts, linear layouts, CSV and "
                         "JSON; a layout checked against them.", epilog=EPILOG,
                         no_args_is_help=True, rich_markup_mode=None)
app.add_typer(layout_app, name="layout")
ProbeArg = Annotated[str | None, typer.Argument(
    metavar="PROBE", help="A probe with lane maps: lane-id, matrix-move, sparse or a TMA "
                          "box's (its newest pinned dataset that is not retired).",
    show_default=False)]
DatasetOpt = Annotated[Path | None, typer.Option(
    "--dataset", help="Read this dataset instead of the probe's newest.", show_default=False)]
KernelOpt = Annotated[str | None, typer.Option(help="One kernel (default: every one).",
                                               show_default=False)]
PreregOpt = Annotated[Path | None, typer.Option(
    help="Number the map as this sealed file's table (its a_m, a_k, b_k, b_n, d_m, d_n), "
         "for the kernels its literal scoring CONFIRMS; default: the dataset's own "
         "(canonical) labels.", show_default=False)]


SealedOpt = Annotated[Path | None, typer.Option(
    help="Instead of a dataset, the map this sealed file's table PREDICTS on its probe's grid "
         "(for a layout nobody has measured yet, e.g. a probe's calculator-layout.toml); "
         "said to be a prediction wherever it is shown.", show_default=False)]


def _layout_source(probe: str | None, dataset: Path | None, kernel: str | None,
                   operand: str | None, prereg: Path | None, sealed: Path | None) -> Any:
    from probelab.layout_export import sealed_source, source

    if sealed is None:
        return source(probe, dataset, kernel, operand, prereg)
    if dataset is not None or prereg is not None:
        raise UsageError("--sealed reads a sealed file's table, not a dataset: give it without "
                         "--dataset and --prereg")
    src = sealed_source(sealed, kernel, operand)
    if probe is not None and probe != src.probe:
        raise UsageError(f"{sealed} is about {src.probe}, not {probe}")
    return src


def _operand(value: str | None) -> str | None:
    from probelab.lanemaps import KIT_OPERANDS, OPERANDS

    known = OPERANDS + KIT_OPERANDS
    if value is not None and value.lower() not in known:
        raise UsageError(f"--operand {value}: one of {', '.join(o.upper() for o in known)}")
    return None if value is None else value.lower()


@layout_app.command("show", epilog=EPILOG)
@in_lab_of("dataset", "prereg", "sealed", "out_dir")
@guarded
def layout_show(
    probe: ProbeArg = None,
    dataset: DatasetOpt = None,
    kernel: KernelOpt = None,
    operand: Annotated[str | None, typer.Option(help="A, B, C or D (default: every one; C "
                                                "only where it is not held as D); SMEM "
                                                "(ldmatrix, stmatrix), SOURCE (movmatrix), "
                                                "META (mma.sp's governing metadata field).",
                                                show_default=False)] = None,
    form: Annotated[str, typer.Option("--as", help="cute, linear, csv or json.")] = "cute",
    prereg: PreregOpt = None,
    sealed: SealedOpt = None,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Write one file per map into "
                                                 "this folder instead of printing.",
                                                 show_default=False)] = None,
) -> None:
    """Print a probe's measured lane maps, (thread, value) -> (row, col), in the field's
    notations (ldmatrix/stmatrix/movmatrix and mma.sp maps too: docs/layouts.md): the
    smallest CuTe layout (thread, value) -> index (column-major, as CuTe's MMA atoms index
    A, B as (n, k), C/D) and the F2-linear layout (Triton's register/lane/warp
    bases), each found from the data and proved on every cell ("reproduces N/N cells"), or
    the reason the map has no such form; csv and json give every cell.

    Example: probelab layout show mma-f16-f32 --kernel f16_f32_m16n8k16 --operand A
    --prereg preregistrations/mma-f16-f32/ptx-fragments.toml"""
    from probelab.layout_export import FORMS, show_text, write_each

    if form not in FORMS:
        raise UsageError(f"--as {form}: one of {', '.join(FORMS)}")
    src = _layout_source(probe, dataset, kernel, _operand(operand), prereg, sealed)
    if out_dir is not None:
        for path in write_each(src, form, out_dir):
            say(shown(path))
        return
    out.print(show_text(src, form), end="", markup=False, highlight=False)


@layout_app.command("compare", epilog=EPILOG)
@in_lab_of("dataset", "prereg", "sealed", "linear", "table", "figure")
@guarded
def layout_compare(
    probe: ProbeArg = None,
    operand: Annotated[str, typer.Option(help="A, B, C, D, SMEM, SOURCE or META.",
                                         show_default=False)] = "",
    cute: Annotated[str | None, typer.Option(help='A CuTe layout (thread, value) -> index, '
                                             'e.g. "((4,8),(2,2,2)):((32,1),(16,8,128))"; '
                                             "for an operand read from a memory tile, the "
                                             "tile's (row, col) -> element offset, e.g. "
                                             '"Swizzle<3,3,3> o (64,16):(16,1)".',
                                             show_default=False)] = None,
    linear: Annotated[Path | None, typer.Option(help="A linear layout as JSON: {dim: [[row, "
                                                "col], ...]} for register, lane (and warp).",
                                                show_default=False)] = None,
    table: Annotated[Path | None, typer.Option(help="A CSV table lane,value,row,col (a "
                                               "calculator's or CK's, one row per slot).",
                                               show_default=False)] = None,
    dataset: DatasetOpt = None,
    kernel: KernelOpt = None,
    prereg: PreregOpt = None,
    sealed: SealedOpt = None,
    figure: Annotated[Path | None, typer.Option(help="Draw the mismatch map here (STEM.png "
                                                "and STEM.svg; default: not drawn).",
                                                show_default=False)] = None,
) -> None:
    """Score a layout against a measured lane map: exit 0 when it reproduces every cell,
    1 with the first differing cells (and, with --figure, a map of them) when it does not.
    In the dataset's own labels the comparison is up to one renumbering of each axis (all a
    lane-id experiment determines); with --prereg, literal in that confirmed table's
    numbering.

    Example: probelab layout compare mma-f16-f32 --kernel f16_f32_m16n8k16 --operand A
    --cute '((4,8),(2,2,2)):((32,1),(16,8,128))'"""
    from probelab.layout_export import compare, compare_text, mismatch_figure, their_layout

    chosen = _operand(operand or None)
    if chosen is None:
        raise UsageError("give --operand A, B, C or D")
    layout = their_layout(cute, linear, table)
    src = _layout_source(probe, dataset, kernel, chosen, prereg, sealed)
    if len(src.maps) != 1:
        kernels = ", ".join(m.kernel for m in src.maps)
        raise UsageError(f"{len(src.maps)} kernels have that map ({kernels}): give --kernel")
    score = compare(layout, src.maps[0])
    out.print(compare_text(src, layout, score), end="", markup=False, highlight=False)
    if score.matches != score.cells:
        if figure is not None:
            for path in mismatch_figure(src, score, figure):
                say(shown(path))
        raise typer.Exit(1)


fleet_app = typer.Typer(help="Sweep probes across the machines of a Ray cluster "
                        "(pip install 'probelab[fleet]'; docs: README, 'A fleet').",
                        epilog=EPILOG, no_args_is_help=True, rich_markup_mode=None)
app.add_typer(fleet_app, name="fleet")
AddressOpt = Annotated[str, typer.Option(
    "--address", help="The Ray cluster: auto (the one this machine joined with `ray start`), "
                      "HOST:PORT, or ray://HOST:PORT (Ray client).")]
ConnectOpt = Annotated[float, typer.Option(
    "--connect-timeout", min=1, help="Seconds to wait for the cluster at --address to take "
                                     "this driver; then exit 4.")]


def _ray(address: str, timeout_s: float) -> Any:
    """Ray, connected to the cluster at `address` within `timeout_s` (exit 4 with one line
    on how to get it otherwise)."""
    from probelab.errors import Unavailable

    try:
        import ray
    except ImportError:
        raise Unavailable("the fleet needs Ray: pip install 'probelab[fleet]'") from None
    if not ray.is_initialized():
        from probelab.fleet import connect

        connect(address, timeout_s)
    return ray


@fleet_app.command("resources", epilog=EPILOG)
@guarded
def fleet_resources(
    sim: Annotated[list[str] | None, typer.Option(
        "--sim", help="Also serve this target on the simulated device (repeatable); for "
                      "trying a fleet out, never evidence.")] = None,
) -> None:
    """Print what this machine can serve, as JSON for `ray start --resources`.

    Opens the GPU of each backend (cuda, hip) to read its target, and lists every AMD
    target a local toolchain builds for the static probes: e.g.
    {"probelab:hip:gfx942": 1, "probelab:static:gfx950": 1}. Start a worker with
    `ray start --address HEAD:6379 --resources "$(probelab fleet resources)"`.
    """
    from probelab.fleet import node_resources

    say(json.dumps(node_resources(sim or ()), sort_keys=True))


@fleet_app.command("status", epilog=EPILOG)
@guarded
def fleet_status(address: AddressOpt = "auto", as_json: JsonOpt = False,
                 connect_timeout: ConnectOpt = FLEET_CONNECT_S) -> None:
    """The cluster's nodes: alive or not, the (backend, target) pairs each offers, and the
    probes each could run there. Exit 4 when no cluster at --address takes this driver
    within --connect-timeout seconds."""
    _ray(address, connect_timeout)
    from probelab.fleet import status

    rows = status()
    if as_json:
        emit_json(rows)
        return
    for row in rows:
        state = "alive" if row["alive"] else "gone"
        tools = f" [toolchains: {', '.join(row['toolchains'])}]" if row["toolchains"] else ""
        say(f"{row['address']} ({row['node_id'][:12]}, {state}): "
            f"{', '.join(row['offers']) or 'offers nothing to probelab'}{tools}")
        for offer, probes in row["could_run"].items():
            say(f"  {offer}: {', '.join(probes) or '(no probe targets it)'}")


@fleet_app.command("verify", epilog=EPILOG)
@guarded
def fleet_verify(
    address: AddressOpt = "auto",
    as_json: JsonOpt = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help=(
        "Print every check, note and retired dataset, not just the summary."))] = False,
    retired: Annotated[bool, typer.Option("--retired", help=(
        "Check retired datasets in full too."))] = False,
    connect_timeout: ConnectOpt = FLEET_CONNECT_S,
) -> None:
    """`probelab verify`, its probes checked on the cluster's nodes (one task per probe).

    Every node needs its own clone of the lab at this commit, clean, with the same
    archive: each node's ledger, manifest and retirements are compared with this
    checkout's, and every dataset it judged with this checkout's file, byte for byte.
    The result, exit codes and output are a local verify's; nothing is recorded (verify
    --write here does that). Exit 4 when no cluster at --address takes this driver within
    --connect-timeout seconds.
    """
    from probelab.fleet_verify import runner
    from probelab.verify import verify_archive

    _ray(address, connect_timeout)
    _verified(lambda step: verify_archive(runner=runner(), retired=retired, step=step),
              as_json, verbose)


@fleet_app.command("sweep", epilog=EPILOG)
@guarded
@says_what_it_added
def fleet_sweep(
    probes: Annotated[list[str], typer.Argument(help="Probe ids (see `probelab list`).")],
    targets: Annotated[list[str] | None, typer.Option(
        "--targets", help="Only targets matching this pattern (repeatable), e.g. "
                          f"{_said.patterns}.")
    ] = None,
    backend: Annotated[str | None, typer.Option(
        help=f"{_said.backends} or sim; default: each target's own GPU backend "
             f"({_said.own}). Static probes always run on a toolchain.")] = None,
    repeats: Annotated[int | None, typer.Option(help="Fresh launches per kernel (default "
                                                "3, at least 2). Not for static probes.")
    ] = None,
    check_after: Annotated[bool, typer.Option("--check/--no-check", help="Check every "
                                              "sealed hypothesis that applies to each "
                                              "dataset saved, as `sweep --check` does.")
    ] = True,
    wait: Annotated[float, typer.Option(
        help="Seconds a task may wait and run before it is cancelled and reported lost.",
        min=1)] = 24 * 3600.0,
    address: AddressOpt = "auto",
    connect_timeout: ConnectOpt = FLEET_CONNECT_S,
    as_json: JsonOpt = False,
) -> None:
    """Sweep probes on every target some node of the cluster serves, one task per
    (probe, target), each the ordinary sweep on its node (evidence gate, repeats, guards).

    Every dataset comes back to this machine's archive (data/, pinned; or sim-data/),
    saved atomically as it arrives. A node runs the task only at this checkout's commit,
    clean (otherwise it refuses). A node lost mid-task: Ray runs the task again on another
    node that serves the pair, or it is reported lost. A probe no node serves is reported
    before anything runs. Then the checks of every dataset saved, as `sweep --check`
    (--no-check: none). Exit 0 when every task saved and its checks allow it (1 for
    simulated data, which are never evidence; 3 tampered or post hoc), 3 if a task failed
    (a refusal, failed evidence, a guard: its error's own code), 4 if a task was lost or
    no node serves something asked for, or no cluster at --address took this driver
    within --connect-timeout seconds.
    """
    from probelab.fleet import plan
    from probelab.fleet import sweep as run

    ray = _ray(address, connect_timeout)
    planned = plan(probes, ray.cluster_resources(), backend, targets or ())
    for why in planned.unserved:
        say(why, err=True)
    step = (lambda _: None) if as_json else (lambda text: say(f"fleet: {text}", err=True))
    outcomes = run(planned.tasks, repeats=repeats, step=step, wait_s=wait,
                   command=["probelab", *sys.argv[1:]]) if planned.tasks else []
    codes = [int(Exit.NO_DEVICE)] if planned.unserved else []
    codes += [o.code for o in outcomes]
    verdicts: dict[str, dict[str, str]] = {}
    if check_after:
        from probelab import dataset
        from probelab.measurement import SweepResult

        for o in (o for o in outcomes if o.path is not None):
            try:  # one dataset's checks failing leaves the others' to be said
                prov = dataset.stored_provenance(o.path)
                if as_json:  # stdout is the JSON document: the verdicts go in it
                    judgements, _, code = _checked(o.path, prov)
                    verdicts[o.task.name] = {j.doc["hypothesis"]["id"]: j.doc["verdict"]
                                             for j in judgements}
                    codes.append(code)
                else:
                    codes.append(_said_sweep(SweepResult(o.path, None, prov), True))
            except LabError as exc:
                err.print(f"[bold red]error:[/] {safe(str(exc))}", highlight=False)
                verdicts[o.task.name] = {"error": str(exc)}
                codes.append(int(exc.code))
    if as_json:
        emit_json({"tasks": [o.to_dict() | {"verdicts": verdicts.get(o.task.name, {})}
                             for o in outcomes], "unserved": planned.unserved})
    else:
        by_node: dict[str, list[str]] = {}
        for o in outcomes:
            by_node.setdefault(o.node.get("host", "(no node)"), []).append(
                f"{o.task.name} {o.status}")
        for host, done in by_node.items():
            say(f"{host}: {', '.join(done)}")
    if codes and max(codes):
        raise typer.Exit(max(codes))


def main() -> None:
    """The `probelab` command, as a process of its own (tests call `app` in process)."""
    # Optional packages this process never uses, which xarray and pandas import wherever they
    # are installed: cupy (xarray looks for cupy arrays on each coordinate it builds) and
    # pyarrow (pandas' string storage). Together 0.25 s of every command on the H200 machine;
    # without them xarray and pandas hold numpy arrays, as on a machine without them.
    for unused in ("cupy", "pyarrow"):
        sys.modules.setdefault(unused, None)
    # importing xarray and pandas allocates a million objects, nearly none of them garbage:
    # collecting the young generation every 50,000 allocations instead of 700 saves 0.1 s
    gc.set_threshold(50_000, 10, 10)
    from probelab.typer_flags import coerce_bool_flags_without_pydantic

    coerce_bool_flags_without_pydantic()  # `list`, `doctor`...: 0.06 s of pydantic for none
    try:
        app()
        code: object = 0
    except SystemExit as done:
        code = done.code
    leave(code)


def leave(code: object) -> None:
    """Exit with `code` (as sys.exit reads it) without tearing the interpreter down: that
    teardown (xarray, pandas, h5py, the CUDA driver's handlers) costs 0.1-0.2 s and does
    nothing a finished command needs. Every file probelab writes is written atomically and
    closed before its command returns; output is flushed here; a backend's early set-up is
    waited for."""
    if not isinstance(code, int | None):
        print(code, file=sys.stderr)
        code = 1
    if (backends := sys.modules.get("probelab.backends")) is not None:
        backends.settle()  # imported only by commands that use a backend
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError):  # a reader gone (`| head`) misses what it left
            stream.flush()
    os._exit(code or 0)
