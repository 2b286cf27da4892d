"""The `magbench` command line: run the benchmark, compare two runs, chat with a memory agent, try the engine."""

from __future__ import annotations

import argparse
import logging
import math
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from harness.data.beir import DatasetFormatError
from harness.data.dialogue import TurnFormat
from harness.data.spec import DatasetSpec
from harness.measure.metrics import CutoffError
from harness.output.perf_summary import PerfSummary, PerfSummaryError
from harness.output.results import ResultsFileError
from harness.systems.options import OptionError, parse_options, system_options, with_options
from harness.systems.registry import SystemSpecError, resolve
from harness.verdicts.compare import LATENCY_TOLERANCE
from harness.verdicts.perf_compare import RATIO_TOLERANCE
from reference import BackendUnavailableError, MagneticError
from reference.encoders import ENCODER_NAMES

if TYPE_CHECKING:
    from harness.experiments.answers import Answering


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="magbench", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log what the engine decides")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run the benchmark and write a report under reports/")
    run.add_argument("--quick", action="store_true", help="small sizes and fewer seeds: a smoke run")
    run.add_argument(
        "--dataset",
        type=DatasetSpec.parse,
        help="evaluate only this: locomo:FILE, longmemeval:FILE (a dialogue memory per conversation), beam:DIR "
        "(real-text passages, recall vs exact), or a BEIR-format directory (corpus.jsonl, queries.jsonl, qrels/)",
    )
    run.add_argument(
        "--corpus",
        default="stdlib",
        help="real text for the default run's real-text regime: a text file, a folder of .txt/.md/.rst, a BEIR "
        "corpus.jsonl or beam:DIR (default: this Python's standard library documentation)",
    )
    run.add_argument(
        "--turn-format",
        default="speaker,captions",
        help="how a dialogue turn becomes text: any of speaker,date,captions, or plain (default speaker,captions)",
    )
    run.add_argument(
        "--spread",
        type=_positive_number,
        default=0.8,
        help="how diffuse the synthetic clusters are (0.8 default; 1.0 and 1.2 are harder, closer to real text)",
    )
    run.add_argument(
        "--passes", type=positive_int, help="timing passes over every system, interleaved (default 5; --quick 3)"
    )
    run.add_argument(
        "--max-passes",
        type=positive_int,
        help="more passes, up to this many, while the medians are unsettled (default 12; --quick 3)",
    )
    run.add_argument(
        "--slow-down",
        action="append",
        default=[],
        metavar="SYSTEM=FACTOR",
        help="make a system's searches FACTOR times slower, to check that `compare` catches a regression "
        "(the report says so); repeatable",
    )
    run.add_argument(
        "--stream-size",
        type=positive_int,
        help="cells of the streaming runbooks (default 4,000 in the default run; every passage with beam:DIR)",
    )
    run.add_argument(
        "--tenants", type=positive_int, help="scopes of the multi-tenant runbook, 100 cells each (default 500)"
    )
    run.add_argument("--encoder", choices=ENCODER_NAMES, help="one encoder instead of the plan's (mock and minilm)")
    run.add_argument("--systems", help="comma-separated registry names or module:factory specs")
    run.add_argument(
        "--system-option",
        action="append",
        default=[],
        metavar="NAME:KEY=VALUE",
        help="an option for the factory of NAME, one of --systems (repeatable): a variant chosen on the command line",
    )
    run.add_argument("--out", type=Path, help="report directory (default reports/<timestamp>)")
    run.add_argument(
        "--experiments",
        type=_names,
        help="only these registered experiments, comma-separated (default: every one the data has)",
    )
    run.add_argument(
        "--list-experiments", action="store_true", help="list the registered experiments and the data each runs on"
    )
    _answer_options(run)

    compare = commands.add_parser(
        "compare",
        help="diff two runs (or two perf summaries, reports/perf-summary.json); exit 1 on a regression beyond noise, 2 "
        "when they share nothing",
    )
    compare.add_argument("run_a", help="the baseline run directory (or its results.json, or a perf summary)")
    compare.add_argument("run_b", help="the new run directory (or its results.json, or a perf summary)")
    compare.add_argument(
        "--ratio-tolerance",
        type=_at_least_zero,
        default=RATIO_TOLERANCE,
        help="perf summaries: relative move of a ratio to its same-run baseline allowed (default 0.2; a regression "
        "must also lie outside both runs' paired rounds)",
    )
    compare.add_argument(
        "--latency-tolerance",
        type=_at_least_zero,
        default=LATENCY_TOLERANCE,
        help="relative slowdown of the median allowed beyond the drift of the other systems (default 0.5; a "
        "regression must also lie outside both runs' pass-to-pass noise)",
    )
    compare.add_argument(
        "--recall-tolerance", type=_at_least_zero, default=0.01, help="absolute recall@10 drop allowed"
    )
    compare.add_argument("--all", action="store_true", help="every measurement, not only the changes")

    conformance = commands.add_parser("conformance", help="run the SPEC.md conformance suite against a system")
    conformance.add_argument("system", help="module:factory of an adapter, or a registry name")
    conformance.add_argument(
        "--option", action="append", default=[], metavar="KEY=VALUE", help="an option for the factory (repeatable)"
    )
    conformance.add_argument(
        "--report", type=Path, default=Path("reports/conformance"), help="where conformance.md and conformance.json go"
    )

    chat = commands.add_parser("chat", help="an interactive memory agent with slash commands")
    chat.add_argument("--db", help="persist memories in this directory (embedded Chroma)")
    chat.add_argument("--chroma-server", metavar="HOST:PORT", help="keep memories in a Chroma server instead")
    chat.add_argument("--model", default="llama3.2", help="the Ollama chat model")
    chat.add_argument("--encoder", choices=ENCODER_NAMES, default="auto")
    chat.add_argument("--ollama-host", help="Ollama's URL (default OLLAMA_HOST or http://127.0.0.1:11434)")
    chat.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the model")

    serve = commands.add_parser("serve", help="serve one memory to MCP clients (stdio, or streamable HTTP)")
    where = serve.add_mutually_exclusive_group()
    where.add_argument("--db", help="the memory's directory (embedded Chroma; default: in memory)")
    where.add_argument("--chroma-server", metavar="HOST:PORT", help="keep the memory in a Chroma server instead")
    where.add_argument("--postgres", metavar="DSN", help="keep the memory in a PostgreSQL database instead")
    serve.add_argument("--namespace", help="the memory's namespace on a Chroma server or in a database (default mem)")
    serve.add_argument("--encoder", choices=ENCODER_NAMES, default="auto")
    serve.add_argument("--http", action="store_true", help="streamable HTTP at http://HOST:PORT/mcp, not stdio")
    serve.add_argument("--host", default="127.0.0.1", help="the HTTP address (another than loopback needs --tokens)")
    serve.add_argument("--port", type=positive_int, default=8765)
    serve.add_argument("--tokens", type=Path, help="JSON file binding each bearer token to the scopes it may use")
    serve.add_argument("--user-id", default="default", help="whose memory a call that names nobody acts on")
    serve.add_argument(
        "--shards",
        type=positive_int,
        help="with --postgres: one of several processes, each serving the scopes "
        "routed to it among this many shards (docs/tenants.md#scale-out)",
    )
    serve.add_argument("--address", help="with --shards: where callers reach this process (default its HTTP URL)")
    serve.add_argument("--lease", type=float, help="seconds a dead process holds its namespace (default 5)")

    demo = commands.add_parser("demo", help="ingest a generated haystack with needles and search it")
    demo.add_argument("--encoder", choices=ENCODER_NAMES, default="auto")
    demo.add_argument("--size", type=positive_int, default=2000, help="documents in the haystack")
    demo.add_argument("--path", help="persist the memory in this directory (embedded Chroma)")
    demo.add_argument("--chroma-server", metavar="HOST:PORT", help="keep the memory in a Chroma server instead")
    demo.add_argument("--seed", type=int, default=0)
    for command in commands.choices.values():
        command.set_defaults(command_parser=command)  # a mistake is shown with this command's usage
    return parser


def _answer_options(run: argparse.ArgumentParser) -> None:
    """The options of LoCoMo's corrected key and of the answers experiment (`harness.experiments.answers`)."""
    run.add_argument(
        "--errata",
        type=Path,
        help="LoCoMo corrections (the audit's errors.json format): every table "
        "gives the original and the corrected key",
    )
    run.add_argument(
        "--answers",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="answers to score (question_id / generated_answer JSON, or id → answer); repeatable",
    )
    run.add_argument("--reader", metavar="ollama:MODEL", help="answer each question from each system's top 10 turns")
    run.add_argument(
        "--judge",
        metavar="ollama:MODEL",
        help="judge answers (published and strict prompts), its leniency measured on known-wrong answers",
    )
    run.add_argument(
        "--judge-probe",
        action="append",
        default=[],
        type=Path,
        metavar="FILE",
        help="known-wrong answers (e.g. the audit's adversarial sets) to measure the judge on; repeatable",
    )
    run.add_argument(
        "--claim",
        action="append",
        default=[],
        metavar="NAME=ACCURACY",
        help="a published accuracy of an answer set, checked against the judged one; repeatable",
    )
    run.add_argument("--ollama-host", help="Ollama's URL for --reader and --judge (default OLLAMA_HOST or local)")
    run.add_argument("--llm-timeout", type=_positive_number, default=120.0, help="seconds to wait for a model")


def _answering(args: argparse.Namespace) -> Answering | None:
    """The answers experiment's options, checked before any work (None: it has nothing to score)."""
    from harness.experiments.answers import Answering

    if args.errata is not None:
        _check_errata(args.dataset, args.errata)
    if not (args.answers or args.reader or args.judge or args.judge_probe or args.claim):
        return None
    if args.dataset is None or args.dataset.kind != "locomo":
        raise OptionError("--answers, --reader and --judge score answers to a LoCoMo file: give --dataset locomo:FILE")
    files = tuple((name, Path(path)) for name, path in (_pair(spec, "--answers", "NAME=FILE") for spec in args.answers))
    for path in (*(p for _, p in files), *args.judge_probe):
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such answers file")
    claims = dict(map(_claim, args.claim))
    answering = Answering(
        files, args.reader, args.judge, tuple(args.judge_probe), claims, args.ollama_host, args.llm_timeout
    )
    answering.check_claims(_names(args.systems) if args.systems else None)
    return answering


def _check_errata(dataset: DatasetSpec | None, errata: Path) -> None:
    """Corrections apply to the LoCoMo file of the run, every one of them matched, before any work."""
    from harness.data.dialogue import locomo_questions
    from harness.data.errata import apply_errata, load_errata

    if dataset is None or dataset.kind != "locomo":
        raise OptionError("--errata corrects LoCoMo's key: give --dataset locomo:FILE")
    if not errata.is_file():
        raise FileNotFoundError(f"--errata {errata}: no such file")
    apply_errata(locomo_questions(dataset), load_errata(errata))


def _pair(spec: str, option: str, shape: str) -> tuple[str, str]:
    name, _, value = spec.partition("=")
    if not name or not value:
        raise OptionError(f"{option} {spec}: expected {shape}")
    return name, value


def _claim(spec: str) -> tuple[str, float]:
    """`NAME=ACCURACY`: a published accuracy, a share between 0 and 1."""
    name, value = _pair(spec, "--claim", "NAME=ACCURACY, e.g. mem0=0.6688")
    try:
        accuracy = _finite(value, 0, open_below=False)
    except argparse.ArgumentTypeError as error:
        raise OptionError(f"--claim {spec}: the accuracy {error}") from None
    if accuracy > 1:
        raise OptionError(f"--claim {spec}: an accuracy is a share between 0 and 1")
    return name, accuracy


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


USER_ERRORS = (
    MagneticError,
    DatasetFormatError,
    SystemSpecError,
    CutoffError,
    ResultsFileError,
    PerfSummaryError,
    OptionError,
    FileNotFoundError,
    IsADirectoryError,
)
"""Mistakes a user can fix: one line, exit status 2, no traceback (unless --debug)."""


def main(argv: list[str] | None = None) -> int:
    """Run a command; a user's mistake ends it with one line naming what to fix and exit status 2."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # named by the command's own usage, not the top level's
        args.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        return _run(args, argv)
    except USER_ERRORS as error:
        if args.debug:
            raise
        parser.exit(2, f"magbench {args.command}: error: {error}\n")


def _check_run_inputs(args: argparse.Namespace, systems: tuple[str, ...] | None) -> None:
    """Everything a run needs from the user, checked before any work starts."""
    for spec in systems or ():
        resolve(spec)
    if args.dataset and not args.dataset.location.exists():
        raise FileNotFoundError(f"--dataset {args.dataset}: {args.dataset.location} does not exist")
    if args.corpus != "stdlib":
        location = args.corpus.removeprefix("beam:")
        if not Path(location).exists():
            raise FileNotFoundError(f"--corpus {args.corpus}: {location} does not exist")
    if args.out is not None:
        _check_writable(args.out)


def _check_writable(out: Path) -> None:
    """The report directory exists or can be made, and can be written: a run must not end in an error
    after all its work."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise OptionError(f"--out {out}: a file is in the way; give a folder for the report") from None
    except OSError as error:
        raise OptionError(f"--out {out}: cannot make this folder ({error.strerror})") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise OptionError(f"--out {out}: this folder cannot be written")


def _run(args: argparse.Namespace, argv: list[str] | None) -> int:
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")
    if args.command == "run":
        from harness.benchmark import run_benchmark
        from harness.experiments.definition import data_of
        from harness.experiments.registry import listing, selected
        from harness.measure.plan import RunPlan

        if args.list_experiments:
            print(listing())
            return 0
        systems = _names(args.systems) if args.systems else None
        variants = _variants(systems, args.system_option)
        systems = systems and tuple(variants.values())
        selected(data_of(args.dataset), args.experiments)
        _check_run_inputs(args, systems)
        answering = _answering(args)
        turn_format = _turn_format(args.turn_format)
        plan = RunPlan.quick() if args.quick else RunPlan()
        slow_down = {variants.get(system, system): factor for system, factor in _slow_down(args.slow_down).items()}
        plan = replace(plan, spread=args.spread, slow_down=slow_down)
        if args.passes is not None:
            plan = replace(plan, passes=args.passes)
        if args.max_passes is not None:
            plan = replace(plan, max_passes=args.max_passes)
        if args.tenants is not None:
            plan = replace(plan, tenant_scopes=args.tenants)
        run_benchmark(
            plan,
            out=args.out,
            dataset=args.dataset,
            encoder=args.encoder,
            systems=systems,
            command=" ".join(["magbench", *(argv or sys.argv[1:])]),
            corpus=args.corpus,
            turn_format=turn_format,
            stream_size=args.stream_size,
            only=args.experiments,
            errata=args.errata,
            answering=answering,
        )
        return 0
    if args.command == "compare" and (PerfSummary.is_one(args.run_a) or PerfSummary.is_one(args.run_b)):
        return _compare_perf(args)
    if args.command == "compare":
        from harness.output.results import RunResults
        from harness.verdicts.compare import compare, render

        comparison = compare(
            RunResults.load(args.run_a),
            RunResults.load(args.run_b),
            latency_tolerance=args.latency_tolerance,
            recall_tolerance=args.recall_tolerance,
        )
        if not comparison.shared:
            print(
                f"{args.run_a} and {args.run_b} share no measurement (no section, system, dataset and size in common)"
            )
            return 2
        print(render(comparison, everything=args.all, latency_tolerance=args.latency_tolerance))
        regressions = comparison.regressions
        sections = sorted({f"{c.key.section}:{c.key.system}" for c in regressions})
        print(
            f"\n{len(regressions)} regression(s) beyond noise and tolerance"
            + (f": {', '.join(sections)}" if sections else "")
        )
        return 1 if regressions else 0
    if args.command == "conformance":
        try:
            import pytest
        except ImportError:
            raise SystemSpecError(
                "the conformance suite needs pytest: pip install 'magnetic-bench[test]' (tox -e bench has it)"
            ) from None
        resolve(args.system)  # a wrong name or an unimportable adapter ends here, before any test or report
        parse_options(args.option)  # and so does a malformed option

        options = [f"--memory-system-option={option}" for option in args.option]
        return int(
            pytest.main(
                [
                    "--pyargs",
                    "harness.conformance",
                    "-p",
                    "no:cacheprovider",
                    # this command imported the harness and the engine before pytest started, and pytest warns that
                    # it cannot rewrite them; the suite's own module is imported later and still rewritten
                    "-W",
                    "ignore::pytest.PytestAssertRewriteWarning",
                    "-q",
                    f"--memory-system={args.system}",
                    f"--conformance-report={args.report}",
                    *options,
                ]
            )
        )
    if args.command == "chat":
        from harness.chat import run_chat

        return run_chat(
            db=args.db,
            server=args.chroma_server,
            model=args.model,
            encoder_name=args.encoder,
            ollama_host=args.ollama_host,
            timeout=args.timeout,
        )
    if args.command == "serve":
        try:
            from reference.integrations.mcp_server import serve
        except ImportError as error:
            raise BackendUnavailableError(
                f"magbench serve needs the MCP SDK ({error}): pip install 'magnetic-bench[serve]'"
            ) from None

        return serve(
            db=args.db,
            chroma_server=args.chroma_server,
            postgres=args.postgres,
            namespace=args.namespace,
            encoder_name=args.encoder,
            http=args.http,
            host=args.host,
            port=args.port,
            tokens=args.tokens,
            default_user=args.user_id,
            shards=args.shards,
            address=args.address,
            lease_seconds=args.lease,
        )
    from harness.demo import run_demo

    return run_demo(
        encoder_name=args.encoder, size=args.size, path=args.path, server=args.chroma_server, seed=args.seed
    )


def _finite(text: str, lowest: float, *, open_below: bool) -> float:
    """A finite number at least (or, `open_below`, above) `lowest`; argparse's float takes nan and inf."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, not {text!r}") from None
    if not math.isfinite(value) or value < lowest or (open_below and value == lowest):
        raise argparse.ArgumentTypeError(
            f"must be a finite number {'above' if open_below else 'of at least'} {lowest:g}, not {text}"
        )
    return value


def _names(text: str) -> tuple[str, ...]:
    """A comma-separated list of names, blanks dropped."""
    return tuple(name.strip() for name in text.split(",") if name.strip())


def _positive_number(text: str) -> float:
    return _finite(text, 0, open_below=True)


def _compare_perf(args: argparse.Namespace) -> int:
    """`compare` of two perf summaries: the ratios that moved; exit 1 on a regression, 2 when they share none."""
    from harness.verdicts.perf_compare import compare_ratios, render_ratios

    changes = compare_ratios(PerfSummary.load(args.run_a), PerfSummary.load(args.run_b), tolerance=args.ratio_tolerance)
    if not changes:
        print(f"{args.run_a} and {args.run_b} share no ratio")
        return 2
    print(render_ratios(changes, everything=args.all))
    regressions = [c.name for c in changes if c.regression]
    print(
        f"\n{len(regressions)} regression(s) beyond noise and tolerance"
        + (f": {', '.join(regressions)}" if regressions else "")
    )
    return 1 if regressions else 0


def _at_least_zero(text: str) -> float:
    return _finite(text, 0, open_below=False)


def _slow_down(specs: list[str]) -> dict[str, float]:
    """`SYSTEM=FACTOR` options as a mapping; a malformed one is a user error."""
    factors = {}
    for spec in specs:
        system, _, factor = spec.partition("=")
        try:
            factors[system] = _finite(factor, 1, open_below=False)
        except argparse.ArgumentTypeError as error:
            raise SystemSpecError(f"--slow-down {spec}: expected SYSTEM=FACTOR, the factor {error}") from None
        if not system:
            raise SystemSpecError(f"--slow-down {spec}: expected SYSTEM=FACTOR, e.g. flat-numpy=2")
    return factors


def _variants(systems: tuple[str, ...] | None, items: list[str]) -> dict[str, str]:
    """Each system of --systems as the spec of its variant with the options --system-option gives it."""
    options = system_options(items)
    unknown = sorted(set(options) - set(systems or ()))
    if unknown:
        raise OptionError(f"--system-option {unknown[0]}:...: {unknown[0]} is not one of --systems {systems or ()}")
    return {system: with_options(system, options.get(system, [])) for system in systems or ()}


def _turn_format(spec: str) -> TurnFormat:
    try:
        return TurnFormat.parse(spec)
    except ValueError as error:
        raise DatasetFormatError(f"--turn-format {spec}: {error}") from None


if __name__ == "__main__":
    sys.exit(main())
