"""Test support: the command line run in-process."""

from __future__ import annotations

from an5dpy.cli import main as cli


def run(capsys, *argv, translate=False):
    """Run the CLI in-process: (exit status, stdout, stderr); argparse exits count too."""
    entry = cli.translate_main if translate else cli.main
    try:
        status = entry([str(a) for a in argv])
    except SystemExit as e:
        status = e.code
    out, err = capsys.readouterr()
    return status, out, err
