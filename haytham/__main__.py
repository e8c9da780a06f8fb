"""``python -m haytham``: the same command line as the ``haytham`` executable."""

from haytham.cli.main import main

if __name__ == "__main__":
    main()
