"""`python -m npu_studio [FILE]` opens the app; `python -m npu_studio COMMAND ...` runs the CLI."""

import sys


def main() -> int:
    from .cli import COMMANDS

    argv = sys.argv[1:]
    if argv and (argv[0] in COMMANDS or argv[0] in ("-h", "--help")):
        from .cli import main as cli_main

        return cli_main(argv)
    from .app import main as app_main

    return app_main(argv)


if __name__ == "__main__":
    sys.exit(main())
