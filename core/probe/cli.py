"""The ``probe`` command line."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from probe.errors import ProbeError
from probe.io import os_error
from probe.plugins import Host
from probe.version import __version__

MAIN_EPILOG = """examples:
  probe compare -tp target/dump.json -gp golden/dump.json -o out
  probe -f mindspore compare -tp ms_dump/step0 -gp pt_dump/step0 -am -o out
  probe diagnose -tp target/step0 -gp golden/step0 -o out --html     # which call went wrong
  probe compare -tp t/dump.json -gp g/dump.json -o out --auto-match  # names differ
  probe compare -gp golden -tp npu_eager -tp npu_graph -o out        # one golden, many targets
  probe diff out_yesterday out_today --fail-on newly-failing         # what changed (CI)
  probe graph -tp target/step0 -gp golden/step0 -o out --html        # browsable graphs
  probe plugins
Run 'probe COMMAND --help' for the options of a command.
"""


class _OneLineFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return f"probe: {record.levelname.lower()}: {record.getMessage()}"


def _setup_logging(verbose: int, quiet: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLineFormatter())
    log = logging.getLogger("probe")
    log.handlers[:] = [handler]
    log.propagate = False
    log.setLevel(logging.ERROR if quiet else (logging.DEBUG if verbose > 1 else logging.INFO if verbose else logging.WARNING))


def _add_framework_option(cmd_parser: argparse.ArgumentParser) -> None:
    """``-f/--framework`` after the command too (msProbe's ``msprobe -f mindspore compare``
    and ``compare -f mindspore`` both work); absent, the value given before the command stays."""
    taken = {s for action in cmd_parser._actions for s in action.option_strings}
    if not {"-f", "--framework"} & taken:
        cmd_parser.add_argument("-f", "--framework", dest="framework", default=argparse.SUPPRESS,
                                help="framework of the dumps (same as before the command)")


def build_parser(host) -> argparse.ArgumentParser:
    """The top-level parser with one sub-parser per registered command."""
    parser = argparse.ArgumentParser(
        prog="probe",
        description="Compare two neural-network dumps and find the operator that went wrong.",
        epilog=MAIN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"probe {__version__}")
    parser.add_argument("-f", "--framework", help="framework of the dumps (default: read from dump.json); "
                        "also accepted after the command")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output")
    parser.add_argument("-q", "--quiet", action="store_true", help="errors only")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in host.commands.values():
        cmd_parser = sub.add_parser(
            command.name, aliases=list(command.aliases), help=command.help,
            description=command.description or command.help, epilog=command.epilog,
            formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False,
        )
        command.add_arguments(cmd_parser)
        _add_framework_option(cmd_parser)
        if command.name in ("compare", "diagnose"):
            host.add_compare_options(parser=cmd_parser)
        cmd_parser.set_defaults(handler=command)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``probe`` command; returns the exit code."""
    # probe's own parallelism is processes; a BLAS thread pool per process only adds start-up
    # and contention (about 0.1 s of CPU per tensor compare). Users may still set it themselves.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        host = Host()
        parser = build_parser(host)
    except ProbeError as exc:
        print(f"probe: error: {exc}", file=sys.stderr)
        return exc.exit_code
    args = parser.parse_args(argv)
    _setup_logging(args.verbose, args.quiet)
    for info in host.broken_plugins():
        print(f"probe: warning: plugin {info.name} ({info.distribution} {info.version}) failed to load: {info.error}",
              file=sys.stderr)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    try:
        return args.handler.run(args, host)
    except ProbeError as exc:
        print(f"probe: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:  # an unreadable directory, a full disk: one line, exit 2
        error = os_error(exc)
        print(f"probe: error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("probe: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
