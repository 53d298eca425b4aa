"""``optsched docs`` and ``optsched examples``: the documentation and examples of this install.

Both work from the installed wheel alone (:mod:`optsched.docs`): ``docs`` builds the HTML once
into the user's cache (with the ``docs`` extra) and opens or prints it, ``examples`` writes the
example scripts and experiment files out so that the README's ``--plugin examples/my_policy.py``
works anywhere. :func:`register` also gives the root command its epilog pointing to the
glossary, and :data:`GLOSSARY_HINT` is the line other commands' help ends with.
"""

from __future__ import annotations

from pathlib import Path

import click

from optsched.cli.common import err_console, json_option, print_json

__all__ = ["GLOSSARY_HINT", "register"]

#: One help line naming where every column and key is explained (no URL: the project publishes
#: none; the page ships with the install and opens offline).
GLOSSARY_HINT = (
    "Every column header and JSON key is defined in the glossary: optsched docs glossary "
    "(docs/guide/glossary.rst)."
)


@click.command("docs")
@click.argument("page", required=False, default="index")
@click.option(
    "--print-path",
    is_flag=True,
    help="Print the page's HTML file (built first if needed) instead of opening it; without "
    "Sphinx, the page's source file.",
)
@click.option("--no-open", is_flag=True, help="Build if needed, open no browser; print the path.")
@click.option("--rebuild", is_flag=True, help="Build again even if this version is built.")
@click.option(
    "--no-build",
    is_flag=True,
    help="Never build: the built HTML page if there is one, else the page's source file.",
)
@json_option
def docs_cmd(
    page: str, print_path: bool, no_open: bool, rebuild: bool, no_build: bool, as_json: bool
) -> None:
    """Open the documentation of the installed optsched (offline), at PAGE if given.

    PAGE is a page path under docs/ (``guide/simulator``, ``api/sim``) or its last part
    (``glossary``). The HTML is built once per installed version into the user's cache
    ($OPTSCHED_CACHE_DIR, else ~/.cache/optsched), which needs Sphinx and its theme:
    pip install 'optsched[docs]'. Without them the command says so and prints the page's
    reStructuredText source, which reads as text.
    """
    import webbrowser

    from optsched.docs import default_html_dir, html_page, missing_build_modules, page_source
    from optsched.errors import MissingExtraError

    built = True
    try:
        if no_build and not (default_html_dir() / "index.html").is_file():
            raise MissingExtraError(f"not built yet (run: optsched docs {page})")
        if (rebuild or not (default_html_dir() / "index.html").is_file()) and not (
            missing_build_modules()
        ):
            err_console.print(
                f"building the docs of this version into {default_html_dir()} (once; minutes)",
                markup=False,
                highlight=False,
            )
        path = html_page(page, rebuild=rebuild)
    except MissingExtraError as exc:
        err_console.print(f"optsched docs: {exc}", markup=False, highlight=False)
        path, built = page_source(page), False
    if as_json:
        print_json({"path": str(path), "built": built, "page": page})
        return
    if print_path or no_open or not built or not webbrowser.open(path.as_uri()):
        click.echo(str(path))


@click.command("examples")
@click.argument("dest", required=False, default="examples", type=click.Path(path_type=Path))
@click.option("--force", is_flag=True, help="Overwrite files in DEST that differ.")
@json_option
def examples_cmd(dest: Path, force: bool, as_json: bool) -> None:
    """Write the example scripts and experiment files into DEST (default: ./examples).

    They are the repository's examples/ (runnable scripts per family, my_policy.py for
    --plugin, experiments/*.toml), shipped with the package, so that the README's commands
    work after installing only the wheel. Files already there with the same content are kept;
    differing ones are refused unless --force.
    """
    from optsched.docs import examples_dir, write_examples

    written = write_examples(dest, force=force)
    if as_json:
        print_json({"dest": str(dest), "written": [str(p) for p in written]})
        return
    err_console.print(
        f"{len(written)} file(s) written to {dest} (from {examples_dir()})",
        markup=False,
        highlight=False,
    )
    click.echo(str(dest))


def _add_epilog(command: click.Command, line: str) -> None:
    command.epilog = f"{command.epilog}\n\n{line}" if command.epilog else line


def _point_to_glossary(group: click.Group) -> None:
    """Every command printing results (it has ``--json``) ends its help with the glossary line."""
    for command in group.commands.values():
        if isinstance(command, click.Group):
            _point_to_glossary(command)
        elif any(p.name == "as_json" for p in command.params) and command is not docs_cmd:
            _add_epilog(command, GLOSSARY_HINT)


def register(group: click.Group) -> None:
    """Add ``docs`` and ``examples``; point the help of result commands to the glossary.

    The root's help too. Registered last, so that the commands of every other module are there.
    """
    _point_to_glossary(group)
    group.add_command(docs_cmd)
    group.add_command(examples_cmd)
    _add_epilog(
        group, f"{GLOSSARY_HINT} The whole manual: optsched docs. Examples: optsched examples."
    )
